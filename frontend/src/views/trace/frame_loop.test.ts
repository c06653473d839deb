import { describe, expect, it } from "vitest";
import { FrameLoop } from "./frame_loop.ts";

function loop(opts: { ready?: boolean; movingFrames?: number } = {}) {
  const queue: ((now: number) => void)[] = [];
  const log = { draws: 0, dts: [] as number[] };
  let moving = opts.movingFrames ?? 0;
  const frames = new FrameLoop(
    {
      ready: () => opts.ready ?? true,
      animate: (_now, dt) => {
        log.dts.push(dt);
        return moving-- > 0;
      },
      draw: () => log.draws++,
    },
    (fn) => queue.push(fn),
  );
  const tick = (now: number) => queue.splice(0).forEach((fn) => fn(now));
  return { frames, queue, log, tick };
}

describe("FrameLoop", () => {
  it("draws once however many changes ask in one animation frame", () => {
    const { frames, queue, log, tick } = loop();
    frames.request();
    frames.request();
    frames.request();
    expect(queue).toHaveLength(1);
    tick(100);
    expect(log.draws).toBe(1);
    expect(queue).toHaveLength(0);
  });

  it("keeps drawing while something moves, told the time since the last frame", () => {
    const { frames, log, tick } = loop({ movingFrames: 3 });
    frames.request();
    tick(1000);
    tick(1010);
    tick(1200);
    tick(1216);
    expect(log.dts).toEqual([16, 10, 50, 16]);
    expect(log.draws).toBe(4);
  });

  it("starts a new motion as if 60 fps", () => {
    const { frames, log, tick } = loop({ movingFrames: 1 });
    frames.request();
    tick(1000);
    tick(1020);
    frames.request();
    tick(5000);
    expect(log.dts).toEqual([16, 20, 16]);
  });

  it("draws nothing before there is something to draw, nor after it stops", () => {
    const idle = loop({ ready: false });
    idle.frames.request();
    idle.tick(1);
    expect(idle.log.draws).toBe(0);
    const stopped = loop();
    stopped.frames.stop();
    stopped.frames.request();
    expect(stopped.queue).toHaveLength(0);
  });
});
