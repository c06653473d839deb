/** When to draw: at most one frame per animation frame however many changes ask for one, and while
 * something moves by itself (a held WASD key) a frame after each frame, told the time since the last. */

export interface FrameHandler {
  /** Whether there is anything to draw yet (a trace opened, a size known). */
  ready(): boolean;
  /** Advances what moves by itself by `dtMs`; true while it keeps moving. */
  animate(now: number, dtMs: number): boolean;
  draw(): void;
}

/** The first frame of a motion advances as if at 60 fps... */
const FIRST_FRAME_MS = 16;
/** ...and a slow frame at most this much, so a stall does not throw the view far. */
const MAX_FRAME_MS = 50;

export class FrameLoop {
  private requested = false;
  private lastFrame = 0;
  private stopped = false;

  constructor(
    private readonly handler: FrameHandler,
    private readonly schedule: (fn: (now: number) => void) => void = (fn) => requestAnimationFrame(fn),
  ) {}

  request(): void {
    if (this.requested || this.stopped) return;
    this.requested = true;
    this.schedule((now) => this.frame(now));
  }

  stop(): void {
    this.stopped = true;
  }

  private frame(now: number): void {
    this.requested = false;
    if (this.stopped || !this.handler.ready()) return;
    const dt = this.lastFrame ? Math.min(now - this.lastFrame, MAX_FRAME_MS) : FIRST_FRAME_MS;
    this.lastFrame = now;
    if (this.handler.animate(now, dt)) this.request();
    else this.lastFrame = 0;
    this.handler.draw();
  }
}
