/** The compiler's view of one XLA program (docs/MEMORY.md, "Compiler view"): a selector of the
 * programs whose HloProtos carry a buffer assignment and one of its memory spaces, the peak and where
 * in program order it happens, the heap over program order (a step line: the bytes after each
 * heap-simulator event, the peak as a red triangle), and the buffers live at the peak with the
 * instruction that defines each. An instruction that trace events run in this program links to them
 * in the Trace tab, whose details panel draws the first one's HLO graph (the graph opens from an
 * event: it has no link of its own). */

import type { ChartConfiguration, TooltipItem } from "chart.js";
import { h } from "../../dom.ts";
import { gridColor } from "../../shared/chart_theme.ts";
import { drawChart, type DrawnChart } from "../../shared/charts.ts";
import type { Column } from "../../shared/table.ts";
import { formatBytes, formatCount } from "../../shared/units.ts";
import type { ProgramBuffer, ProgramMemory, ProgramSummary } from "./api.ts";
import { byteStep, fixedAxisWidth, heapEventsAxis, PEAK_COLOR, type Point, PROGRAM_CHART_LAYOUT } from "./chart.ts";
import { bytesCell, countCell, rowElement, textCell } from "./tables.ts";

export const HEAP_COLOR = "#188038";

function numeric(id: string, title: string, unit: string, help: string, cell: Column<ProgramBuffer>["cell"]): Column<ProgramBuffer> {
  return { id, title, csvTitle: `${title} (${unit})`, numeric: true, help, cell };
}

function text(id: string, title: string, help: string, cell: Column<ProgramBuffer>["cell"]): Column<ProgramBuffer> {
  return { id, title, csvTitle: title, numeric: false, help, cell };
}

export const BUFFER_COLUMNS: Column<ProgramBuffer>[] = [
  numeric("size", "Size", "bytes", "Bytes it occupies (a whole-program allocation: the allocation's size)", (b) => bytesCell(b.size_bytes)),
  numeric("padding", "Padding", "bytes", "Size − what its shape needs without layout padding", (b) => bytesCell(b.size_bytes - b.unpadded_bytes)),
  text("kind", "Kind", "parameter, output, constant (held for the whole run) or temporary (heap)", (b) => textCell(b.kind)),
  text("instruction", "Instruction", "The HLO instruction that defines the buffer", (b) => textCell(b.instruction)),
  text("opcode", "Opcode", "The instruction's opcode", (b) => textCell(b.opcode || undefined, "the instruction is not in the module")),
  text("shape", "Shape", "The buffer's shape with its layout", (b) => textCell(b.shape || undefined, "the instruction is not in the module")),
  text("op_name", "Framework op", "The op that produced the instruction (OpMetadata op_name)", (b) => textCell(b.op_name, "no op name in the instruction's metadata")),
  numeric("allocation", "Allocation", "index", "The buffer allocation it is assigned to", (b) => countCell(b.allocation)),
  numeric("offset", "Offset", "bytes", "Where it sits in its allocation", (b) => bytesCell(b.offset_bytes)),
];

/** "jit_train_step · 8.59 MiB" (and the host when the programs come from several hosts). */
export function programLabel(program: ProgramSummary, severalHosts: boolean): string {
  return `${severalHosts ? `${program.host} · ` : ""}${program.name} (${program.program_id}) · ${formatBytes(program.peak_bytes)}`;
}

/** "Peak 8.59 MiB after 4 of 9 heap events, at ynn_fusion.2". */
export function programPeakText(program: ProgramMemory): string {
  if (program.heap.events === 0) return `Peak ${formatBytes(program.peak_bytes)}: whole-program allocations only`;
  const at = program.peak_instruction ? `, at ${program.peak_instruction}` : "";
  return `Peak ${formatBytes(program.peak_bytes)} after ${formatCount(program.peak_position)} of ${formatCount(program.heap.events)} heap events${at}`;
}

/** "parameter 1.5 MiB · output 1.04 MiB · temporary 6 MiB" in a fixed order. */
export function kindText(program: ProgramMemory): string {
  const order = ["parameter", "output", "constant", "temporary"];
  const kinds = Object.keys(program.bytes_by_kind).sort((a, b) => order.indexOf(a) - order.indexOf(b));
  return kinds.map((k) => `${k} ${formatBytes(program.bytes_by_kind[k])}`).join(" · ");
}

export function heapPoints(program: ProgramMemory): Point[] {
  return program.heap.position.map((x, i) => ({ x, y: program.heap.bytes[i] }));
}

export function heapChartConfig(program: ProgramMemory): ChartConfiguration<"scatter", Point[]> {
  const names = new Map(program.heap.position.map((p, i) => [p, program.heap.instruction[i]]));
  const datasets: ChartConfiguration<"scatter", Point[]>["data"]["datasets"] = [
    { label: "heap", data: heapPoints(program), borderColor: HEAP_COLOR, backgroundColor: HEAP_COLOR, showLine: true, stepped: "before", pointRadius: 0, pointHitRadius: 4, borderWidth: 1.5 },
    { label: "peak", data: [{ x: program.peak_position, y: program.peak_bytes }], pointStyle: "triangle", pointRadius: 8, pointHoverRadius: 10, borderColor: PEAK_COLOR, backgroundColor: PEAK_COLOR },
  ];
  return {
    type: "scatter",
    data: { datasets },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      layout: PROGRAM_CHART_LAYOUT,
      interaction: { mode: "nearest", intersect: false, axis: "x" },
      scales: {
        x: heapEventsAxis(program.heap.events),
        y: {
          beginAtZero: true,
          grid: { color: gridColor },
          ticks: { stepSize: byteStep(program.peak_bytes), callback: (v) => formatBytes(Number(v)) },
          title: { display: true, text: "bytes" },
          afterFit: fixedAxisWidth,
        },
      },
      plugins: {
        tooltip: {
          displayColors: false,
          callbacks: {
            title: (items: TooltipItem<"scatter">[]) => {
              const x = items[0]?.parsed.x ?? 0;
              const name = names.get(x);
              return `after event ${formatCount(x)}${name ? ` (${name})` : ""}`;
            },
            label: (item: TooltipItem<"scatter">) => (item.datasetIndex === 1 ? programPeakText(program) : `heap: ${formatBytes(item.parsed.y ?? 0)}`),
          },
        },
      },
    },
  };
}

/** The heap chart in its frame, its figures as the canvas's text. */
export function heapChart(program: ProgramMemory): { el: HTMLElement; chart: DrawnChart<"scatter", Point[], unknown> } {
  const fallback = h(
    "ul",
    {},
    h("li", { "data-testid": "mem-program-peak-point" }, programPeakText(program)),
    h("li", {}, `heap: ${program.heap.bytes.length} of ${program.heap.events + 1} points`),
  );
  const canvas = h("canvas", { role: "img", "aria-label": `Heap of ${program.name} over program order`, "data-testid": "mem-program-chart-canvas" }, fallback);
  const chart = drawChart(canvas, heapChartConfig(program));
  return { el: h("div", { class: "mem-chart-area", "data-testid": "mem-program-chart" }, canvas), chart };
}

/** The selector: one option per program, the shown one selected; `onPick(program)` on a change. */
export function programSelector(programs: ProgramSummary[], shown: ProgramMemory, onPick: (program: ProgramSummary) => void): HTMLElement {
  const severalHosts = new Set(programs.map((p) => p.host_index)).size > 1;
  const select = h("select", { "data-testid": "mem-program-select", "aria-label": "XLA program" }) as HTMLSelectElement;
  programs.forEach((p, i) => {
    const option = h("option", { value: String(i) }, programLabel(p, severalHosts)) as HTMLOptionElement;
    option.selected = p.program_id === shown.program_id && p.host_index === shown.host_index;
    select.append(option);
  });
  select.addEventListener("change", () => onPick(programs[Number(select.value)]));
  return h("label", { class: "mem-program-pick" }, "Program ", select);
}

/** The memory-space selector (only when the program has several): `onPick(space)` on a change. */
export function memorySpaceSelector(program: ProgramMemory, onPick: (space: number) => void): HTMLElement | null {
  if (program.memory_spaces.length < 2) return null;
  const select = h("select", { "data-testid": "mem-space-select", "aria-label": "Memory space" }) as HTMLSelectElement;
  for (const space of program.memory_spaces) select.append(h("option", { value: String(space) }, space === 0 ? "0 (device memory)" : String(space)));
  select.value = String(program.memory_space);
  select.addEventListener("change", () => onPick(Number(select.value)));
  return h("label", { class: "mem-program-pick" }, "Memory space ", select);
}

/** The Trace tab's link keys to the events that run `instruction` in the shown program (the first
 * selected, its HLO graph in the details panel), or null when no event of the trace runs it. */
export function instructionLink(program: ProgramMemory, instruction: string | undefined): Record<string, string> | null {
  const ids = instruction ? program.instruction_events?.[instruction] : undefined;
  return ids?.length ? { lk: ids.join(",") } : null;
}

export const NO_INSTRUCTION_EVENT = "no event of the trace runs this instruction in this program (parameters, constants and tuples never do)";

/** A button that opens the Trace tab on the events of `instruction`, or null without any. */
export function instructionButton(program: ProgramMemory, instruction: string | undefined, open: (params: Record<string, string>) => void, testId: string): HTMLButtonElement | null {
  const link = instructionLink(program, instruction);
  if (!link || !instruction) return null;
  const count = link.lk.split(",").length;
  const button = h(
    "button",
    { type: "button", class: "mem-link", "data-testid": testId, title: `Show its ${formatCount(count)} ${count === 1 ? "execution" : "executions"} in the Trace tab, with its HLO graph` },
    instruction,
  ) as HTMLButtonElement;
  button.addEventListener("click", () => open(link));
  return button;
}

/** The live buffers' rows: each instruction a link to its events when it has any; a row with a box
 * in the allocation timeline (`data-box`) selects it when clicked (`pick(box)`). */
export function bufferRow(program: ProgramMemory, open: (params: Record<string, string>) => void, pick?: (box: number) => void) {
  return (buffer: ProgramBuffer, columns: readonly Column<ProgramBuffer>[]): HTMLTableRowElement => {
    const tr = rowElement(buffer, columns);
    const box = buffer.timeline_box;
    if (box !== undefined && pick) {
      tr.dataset.box = String(box);
      tr.classList.add("mem-row-pick");
      tr.title = "Click: select its box in the allocation timeline";
      tr.addEventListener("click", (event) => {
        if (!(event.target as HTMLElement).closest("button")) pick(box);
      });
    }
    const cell = tr.querySelector<HTMLTableCellElement>("td[data-col=instruction]");
    if (!cell) return tr;
    const button = instructionButton(program, buffer.instruction, open, "mem-instruction-link");
    if (button) cell.replaceChildren(button);
    else cell.title = NO_INSTRUCTION_EVENT;
    return tr;
  };
}

export function padText(program: ProgramMemory): string {
  return program.padding_bytes ? `${formatBytes(program.temporary_padding_bytes)} of it in temporaries` : "no layout padding";
}
