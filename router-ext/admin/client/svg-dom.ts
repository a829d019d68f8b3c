// The timeline drawing (router-ext/timeline/draw.ts, SVG as data) as DOM nodes:
// elements created in the SVG namespace, attributes and text set one by one,
// never parsed from markup (the page's CSP allows no HTML sinks).
import { SVG_NS, type SvgNode } from "../../timeline/svg.ts";

export function svgElement(node: SvgNode): SVGElement {
  const el = document.createElementNS(SVG_NS, node.tag) as SVGElement;
  for (const [k, v] of Object.entries(node.attrs)) if (k !== "xmlns") el.setAttribute(k, String(v));
  if (node.text !== undefined) el.textContent = node.text;
  for (const c of node.children) el.appendChild(svgElement(c));
  return el;
}
