import { describe, expect, it } from "vitest";
import { pluginState, treeState } from "./liveness.ts";

describe("liveness in the readout", () => {
  it("a plugin is live, ended with its opencode, or none", () => {
    expect(pluginState({ plugin_live: true, plugin_version: "0.1.0", ended: false })).toBe("live");
    expect(pluginState({ plugin_live: false, plugin_version: "0.1.0", ended: true })).toBe("ended");
    // Silent but the session is still heard of (the gate sees it): not called ended.
    expect(pluginState({ plugin_live: false, plugin_version: "0.1.0", ended: false })).toBe("no");
    expect(pluginState({ plugin_live: false, plugin_version: null, ended: true })).toBe("no");
    // An older router without the field never says ended.
    expect(pluginState({ plugin_live: false, plugin_version: "0.1.0" })).toBe("no");
  });

  it("a plugin whose headers reach the gate while its reports do not is headers only", () => {
    expect(
      pluginState({ plugin_live: false, plugin_version: "0.1.0", plugin_headers: true, ended: false }),
    ).toBe("headers only");
    // Reports win over headers; an ended session's plugin ended with it.
    expect(pluginState({ plugin_live: true, plugin_version: "0.1.0", plugin_headers: true })).toBe("live");
    expect(
      pluginState({ plugin_live: false, plugin_version: "0.1.0", plugin_headers: true, ended: true }),
    ).toBe("ended");
  });

  it("a tree is stopped when refused, ended when every session ended, else running", () => {
    expect(
      treeState([
        { refused: false, ended: true },
        { refused: false, ended: true },
      ]),
    ).toBe("ended");
    expect(
      treeState([
        { refused: false, ended: true },
        { refused: false, ended: false },
      ]),
    ).toBe("running");
    expect(treeState([{ refused: true, ended: true }])).toBe("stopped");
    expect(treeState([{ refused: false }])).toBe("running");
    expect(treeState([])).toBe("running");
  });
});
