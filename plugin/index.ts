export const StallguardPlugin = async () => ({});
