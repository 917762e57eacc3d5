import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completeUtf8Length, Utf8ChunkAligner, utf8SequenceLength } from './utf8-boundary.js';

function align(chunks: Buffer[]): Buffer[] {
  const aligner = new Utf8ChunkAligner();
  const pieces: Buffer[] = [];
  for (const chunk of chunks) aligner.push(chunk, (piece) => void pieces.push(Buffer.from(piece)));
  aligner.flush((piece) => void pieces.push(Buffer.from(piece)));
  return pieces;
}

function splitAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of points) {
    chunks.push(bytes.subarray(from, point));
    from = point;
  }
  chunks.push(bytes.subarray(from));
  return chunks;
}

describe('utf8SequenceLength', () => {
  it('knows how long each kind of sequence is', () => {
    expect([0x41, 0xc3, 0xe2, 0xf0, 0x80, 0xff, 0xc0].map(utf8SequenceLength)).toEqual([1, 2, 3, 4, 1, 1, 1]);
  });
});

describe('completeUtf8Length', () => {
  it('stops before an unfinished character and keeps finished ones', () => {
    const euro = Buffer.from('a€', 'utf8'); // 61 E2 82 AC
    expect(completeUtf8Length(euro)).toBe(4);
    expect(completeUtf8Length(euro, 3)).toBe(1);
    expect(completeUtf8Length(euro, 2)).toBe(1);
    expect(completeUtf8Length(Buffer.from('😀', 'utf8'), 3)).toBe(0);
  });

  it('never holds back bytes that are not UTF-8', () => {
    expect(completeUtf8Length(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80]))).toBe(5);
    expect(completeUtf8Length(Buffer.from([0xff]))).toBe(1);
  });
});

describe('Utf8ChunkAligner', () => {
  it('emits only whole characters, however the text is cut', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (text, cuts) => {
          const bytes = Buffer.from(text, 'utf8');
          const pieces = align(splitAt(bytes, cuts));
          expect(Buffer.concat(pieces).equals(bytes)).toBe(true);
          // Decoding piece by piece gives back the text exactly: no character was cut.
          expect(pieces.map((piece) => piece.toString('utf8')).join('')).toBe(text);
        },
      ),
    );
  });

  it('passes arbitrary bytes through unchanged', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.array(fc.nat(), { maxLength: 8 }), (raw, cuts) => {
        const bytes = Buffer.from(raw);
        expect(Buffer.concat(align(splitAt(bytes, cuts))).equals(bytes)).toBe(true);
      }),
    );
  });

  it('gives up a held tail when the next chunk cannot continue it, and on flush', () => {
    const aligner = new Utf8ChunkAligner();
    const pieces: string[] = [];
    aligner.push(Buffer.from([0x61, 0xe2, 0x82]), (piece) => void pieces.push(piece.toString('latin1')));
    expect(aligner.heldBytes).toBe(2);
    aligner.push(Buffer.from('b'), (piece) => void pieces.push(piece.toString('latin1')));
    expect(pieces).toEqual(['a', '\xe2\x82', 'b']);
    aligner.push(Buffer.from([0xe2]), () => {});
    aligner.flush((piece) => void pieces.push(piece.toString('latin1')));
    expect(pieces.at(-1)).toBe('\xe2');
    expect(aligner.heldBytes).toBe(0);
  });
});
