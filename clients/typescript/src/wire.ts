// A strict check of protobuf wire format against baton's schema, run before
// @grpc/proto-loader (protobufjs) decodes a message. protobufjs decodes
// leniently: it reads a known field whatever its wire type and lets a
// length run past the end of the buffer, so a truncated or corrupt answer
// could become `isLeader: true`. This walks the bytes once and throws
// unless every field is well formed: tags and varints end within the
// buffer, lengths stay inside their message, and each known field has its
// type's wire type (unknown fields are allowed, as proto3 requires).

import { descriptor } from "./gen/descriptor.js";

interface FieldJson {
  type: string;
  id: number;
  rule?: string;
}
interface NamespaceJson {
  nested?: Record<string, NamespaceJson>;
  fields?: Record<string, FieldJson>;
  values?: Record<string, number>;
}

const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const FIXED32 = 5;

const SCALAR_WIRE: Record<string, number> = {
  bool: VARINT,
  int32: VARINT,
  int64: VARINT,
  uint32: VARINT,
  uint64: VARINT,
  sint32: VARINT,
  sint64: VARINT,
  fixed64: FIXED64,
  sfixed64: FIXED64,
  double: FIXED64,
  fixed32: FIXED32,
  sfixed32: FIXED32,
  float: FIXED32,
  string: LENGTH,
  bytes: LENGTH,
};

/** A message type's fields by number: the wire type each must have, and its message type if it is one. */
type Shape = Map<number, { wire: number; packable: boolean; message?: string }>;

const root = descriptor as NamespaceJson;

function find(path: string[]): NamespaceJson | undefined {
  let ns: NamespaceJson | undefined = root;
  for (const p of path) ns = ns?.nested?.[p];
  return ns;
}

/** Resolves `name` as protobuf scoping does, from inside the type at `scope`. */
function resolve(name: string, scope: string[]): string[] {
  const parts = name.split(".");
  for (let i = scope.length; i >= 0; i--) {
    const candidate = [...scope.slice(0, i), ...parts];
    if (find(candidate)) return candidate;
  }
  throw new Error(`baton: schema: unknown type ${name}`);
}

const shapes = new Map<string, Shape>();

function shape(fullName: string): Shape {
  const cached = shapes.get(fullName);
  if (cached) return cached;
  const path = fullName.split(".");
  const s: Shape = new Map();
  shapes.set(fullName, s);
  for (const f of Object.values(find(path)?.fields ?? {})) {
    const scalar = SCALAR_WIRE[f.type];
    if (scalar !== undefined) {
      s.set(f.id, { wire: scalar, packable: f.rule === "repeated" && scalar !== LENGTH });
      continue;
    }
    const target = resolve(f.type, path);
    if (find(target)?.values)
      s.set(f.id, { wire: VARINT, packable: f.rule === "repeated" }); // an enum
    else s.set(f.id, { wire: LENGTH, packable: false, message: target.join(".") });
  }
  return s;
}

class Reader {
  constructor(
    private readonly buf: Uint8Array,
    public pos: number,
    private readonly end: number,
  ) {}

  done(): boolean {
    return this.pos >= this.end;
  }

  varint(): number {
    let value = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error("truncated varint");
      const b = this.buf[this.pos++]!;
      if (i < 7) value += (b & 0x7f) * 2 ** (7 * i); // exact below 2^49, enough for tags and lengths
      if ((b & 0x80) === 0) return value;
    }
    throw new Error("varint longer than 10 bytes");
  }

  skip(n: number): void {
    if (n > this.end - this.pos) throw new Error("field runs past the end of its message");
    this.pos += n;
  }
}

function check(buf: Uint8Array, start: number, end: number, type: string): void {
  const s = shape(type);
  const r = new Reader(buf, start, end);
  while (!r.done()) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0) throw new Error("field number 0");
    const known = s.get(field);
    if (known && wire !== known.wire && !(known.packable && wire === LENGTH)) {
      throw new Error(`field ${field} of ${type} has wire type ${wire}, not ${known.wire}`);
    }
    switch (wire) {
      case VARINT:
        r.varint();
        break;
      case FIXED64:
        r.skip(8);
        break;
      case FIXED32:
        r.skip(4);
        break;
      case LENGTH: {
        const n = r.varint();
        const at = r.pos;
        r.skip(n);
        if (known?.message) check(buf, at, at + n, known.message);
        break;
      }
      default:
        throw new Error(`wire type ${wire}`); // groups (3, 4) are not in proto3; 6 and 7 do not exist
    }
  }
}

/**
 * Throws unless `buf` is a well-formed serialized message of `type` (a full
 * name such as "baton.v1.Leadership") as the module comment describes.
 */
export function checkWireFormat(buf: Uint8Array, type: string): void {
  try {
    check(buf, 0, buf.length, type);
  } catch (e) {
    throw new Error(`baton: malformed ${type}: ${(e as Error).message}`);
  }
}
