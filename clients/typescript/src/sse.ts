// A parser of text/event-stream (Server-Sent Events, as the WHATWG HTML
// standard defines the format), for the sidecar's GET /leader/watch: each
// event's `data:` is one Leadership JSON; `: heartbeat` comment lines keep
// a quiet stream alive.

/** What the parser finds in the stream. */
export type SseItem =
  { kind: "event"; event: string; data: string; id: string | undefined } | { kind: "comment"; text: string };

/** An event or a line beyond the parser's limit: the stream is not what the sidecar sends. */
export class SseTooLargeError extends Error {}

/**
 * Incremental parser: feed it the stream's text as it arrives (any split,
 * including inside a line or between \r and \n) and it returns the events
 * and comments completed so far. Fields other than data, event and id are
 * ignored, as the standard says; so is a `retry` field.
 */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private id: string | undefined;
  private size = 0;
  /** The previous chunk ended in \r: a \n at the start of the next one belongs to it. */
  private pendingCr = false;

  /** @param maxEventBytes bounds one event's data and any single line (default 1 MiB). */
  constructor(private readonly maxEventBytes = 1 << 20) {}

  push(chunk: string): SseItem[] {
    if (this.pendingCr && chunk.startsWith("\n")) chunk = chunk.slice(1);
    this.pendingCr = false;
    this.buffer += chunk;
    const items: SseItem[] = [];
    let start = 0;
    for (;;) {
      const m = /\r\n|\r|\n/g;
      m.lastIndex = start;
      const hit = m.exec(this.buffer);
      if (!hit) break;
      // A lone \r at the very end may be the first half of \r\n.
      if (hit[0] === "\r" && hit.index === this.buffer.length - 1) this.pendingCr = true;
      this.line(this.buffer.slice(start, hit.index), items);
      start = hit.index + hit[0].length;
    }
    this.buffer = this.buffer.slice(start);
    if (this.buffer.length > this.maxEventBytes) throw new SseTooLargeError("event-stream line too long");
    return items;
  }

  private line(line: string, items: SseItem[]): void {
    if (line === "") {
      if (this.data.length > 0) {
        items.push({ kind: "event", event: this.event || "message", data: this.data.join("\n"), id: this.id });
      }
      this.data = [];
      this.event = "";
      this.size = 0;
      return;
    }
    if (line.startsWith(":")) {
      items.push({ kind: "comment", text: line.slice(1).replace(/^ /, "") });
      return;
    }
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    switch (name) {
      case "data":
        this.size += value.length + 1;
        if (this.size > this.maxEventBytes) throw new SseTooLargeError("event-stream event too large");
        this.data.push(value);
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
    }
  }
}
