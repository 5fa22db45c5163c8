// The GPUs page's health grid on a canvas (dashboard/gpus/grid_canvas.py mounts it; its data is
// dashboard/charts/health_grid.HealthGridData). Every text is set as text (textContent, fillText), never as HTML:
// host names are data.
const LEFT = 64; // room for "row 1234"
const RIGHT = 10;
const TOP = 4;
const BOTTOM = 50; // rack positions and the axis title
const LEGEND_PX = 30;

function hoverText(d, i) {
  const h = d.host[i];
  let text = `GPU ${d.gpu[i]} | ${d.hosts[h]} #${d.index[i]}, rack ${d.racks[h]} | ${d.labels[d.state[i]]}`;
  const temp = d.temp[i], power = d.power[i];
  if (temp !== null || power !== null) text += ` | ${temp ?? "n/a"} C, ${power ?? "n/a"} W`;
  return text + (d.notes[i] ?? "");
}

function legend(d) {
  const box = document.createElement("div");
  box.className = "legend";
  for (const code of d.legend) {
    const item = document.createElement("span");
    const square = document.createElement("i");
    square.style.background = d.colours[code];
    item.append(square, document.createTextNode(d.labels[code]));
    box.append(item);
  }
  return box;
}

function draw(canvas, d, width) {
  const height = d.height_px - LEGEND_PX;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const cw = (width - LEFT - RIGHT) / d.columns;
  const ch = (height - TOP - BOTTOM) / d.lines;
  const gap = cw > 3 ? 1 : 0;
  // one fill colour at a time: a handful of fillStyle changes for 24k cells
  const byCode = d.colours.map(() => []);
  d.shown.forEach((code, i) => byCode[code].push(i));
  byCode.forEach((members, code) => {
    ctx.fillStyle = d.colours[code];
    for (const i of members) {
      const cell = d.cell[i], line = Math.floor(cell / d.columns), col = cell - line * d.columns;
      const x0 = Math.round(LEFT + col * cw), x1 = Math.round(LEFT + (col + 1) * cw);
      const y0 = Math.round(TOP + line * ch), y1 = Math.round(TOP + (line + 1) * ch);
      ctx.fillRect(x0, y0, Math.max(1, x1 - x0 - gap), Math.max(1, y1 - y0 - gap));
    }
  });
  ctx.fillStyle = d.text_colour;
  ctx.font = `12px ${d.font}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  for (const [line, label] of d.row_labels) ctx.fillText(label, LEFT - 8, TOP + line * ch);
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const axis = TOP + d.lines * ch + 6;
  for (const [col, label] of d.position_labels) ctx.fillText(label, LEFT + col * cw, axis);
  ctx.font = `14px ${d.font}`;
  ctx.fillText(d.x_title, LEFT + (width - LEFT - RIGHT) / 2, axis + 20);
  return { cw, ch };
}

export default function ({ parentElement, data, setTriggerValue }) {
  if (parentElement.__stopGrid) parentElement.__stopGrid(); // drawn again with new data: one listener set
  const d = data;
  const place = new Int32Array(d.columns * d.lines).fill(-1); // cell -> GPU's place in the columns
  d.cell.forEach((cell, i) => { place[cell] = i; });
  const root = document.createElement("div");
  root.className = "grid";
  const canvas = document.createElement("canvas");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", d.summary);
  const tip = document.createElement("div");
  tip.className = "tip";
  tip.hidden = true;
  root.append(legend(d), canvas, tip);
  parentElement.querySelector(".grid")?.remove();
  parentElement.append(root);

  let size = null;
  let drawn = 0;
  const redraw = () => {
    const width = root.clientWidth;
    if (!width || (size && size.width === width)) return;
    size = { width, ...draw(canvas, d, width) };
    // what the browser tests read: the draws, and where cell (line, column) is: left + column x cw, top + line x ch
    root.dataset.drawn = String(++drawn);
    root.dataset.geometry = JSON.stringify([LEFT, TOP, size.cw, size.ch]);
  };
  const observer = new ResizeObserver(redraw);
  observer.observe(root);
  redraw();

  const gpuAt = (event) => {
    if (!size) return -1;
    const box = canvas.getBoundingClientRect();
    const col = Math.floor((event.clientX - box.left - LEFT) / size.cw);
    const line = Math.floor((event.clientY - box.top - TOP) / size.ch);
    if (col < 0 || col >= d.columns || line < 0 || line >= d.lines) return -1;
    return place[line * d.columns + col];
  };
  const onMove = (event) => {
    const i = gpuAt(event);
    canvas.style.cursor = i < 0 ? "default" : "pointer";
    if (i < 0) { tip.hidden = true; return; }
    tip.textContent = hoverText(d, i);
    tip.style.borderColor = d.colours[d.state[i]];
    tip.hidden = false;
    const box = root.getBoundingClientRect();
    const x = event.clientX - box.left, y = event.clientY - box.top;
    // beside the pointer, flipped where it would pass the grid's right or bottom edge (the element's height is
    // fixed: a label past it would scroll it)
    const left = x + 14 + tip.offsetWidth > box.width ? x - 14 - tip.offsetWidth : x + 14;
    const top = y + 14 + tip.offsetHeight > box.height ? y - 14 - tip.offsetHeight : y + 14;
    tip.style.left = `${Math.max(0, left)}px`;
    tip.style.top = `${Math.max(0, top)}px`;
  };
  const onLeave = () => { tip.hidden = true; };
  // a click on a GPU opens it under the tabs (the page's "One GPU")
  const onClick = (event) => {
    const i = gpuAt(event);
    if (i >= 0) setTriggerValue("clicked", d.gpu[i]);
  };
  canvas.addEventListener("mousemove", onMove);
  canvas.addEventListener("mouseleave", onLeave);
  canvas.addEventListener("click", onClick);
  const stop = () => {
    observer.disconnect();
    canvas.removeEventListener("mousemove", onMove);
    canvas.removeEventListener("mouseleave", onLeave);
    canvas.removeEventListener("click", onClick);
  };
  parentElement.__stopGrid = stop;
  return stop;
}
