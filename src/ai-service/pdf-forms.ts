/**
 * What pdf.js decodes to read every page's text, with each use of a stream weighed: a page's
 * content once per reference under /Contents, and a form XObject once per `Do` that draws it
 * (pdf.js's getTextContent fetches and reads the form again for each), forms drawn by forms
 * multiplied along the way. Other streams (fonts, object streams) are decoded once.
 *
 * A `Do` names an XObject through the resources in force: a form's own /Resources when it has a
 * dictionary there, the page's otherwise. A form's inline /XObject dictionary is read exactly; any
 * other name is taken as drawing the costliest form the name is bound to anywhere in the file (one
 * `Do` draws one form, so the largest is an upper bound, and per-page names such as /Fm0 reused
 * on every page do not add up). Forms that draw one another in a cycle are refused.
 */
import type { StreamUses } from './pdf-references.ts';
import type { PdfValue } from './pdf-syntax.ts';
import { refusals } from './refusals.ts';

export interface WeighedStream {
  num: number | null;
  dictionary: Map<string, PdfValue>;
  /** Bytes pdf.js holds when it decodes the stream: the decoded size, or the data's length without filters. */
  size: number;
  /** Whether the stream has filters (its first decoding counts even when it is not page content). */
  filtered: boolean;
  /** `/Name Do` operators in its content, by name. */
  draws: Map<string, number>;
}

/** pdf.js draws an XObject whose /Subtype is /Form; a reference is fetched, so it may be one. */
export function isForm(dictionary: Map<string, PdfValue>): boolean {
  const subtype = dictionary.get('Subtype');
  return subtype?.kind === 'ref' || (subtype?.kind === 'name' && subtype.name === 'Form');
}

/** Edges between forms followed, past which the check refuses rather than spend more time. */
const MAX_EDGES = 2_000_000;

/** The bytes pdf.js decodes for every page's text, repetition weighed; stops counting past `limit`. */
export function weighedSize(streams: WeighedStream[], uses: StreamUses, limit: number): number {
  const clamp = (value: number) => Math.min(value, limit + 1);
  const forms = new Map<number, WeighedStream[]>();
  for (const stream of streams) {
    if (stream.num === null || !isForm(stream.dictionary)) continue;
    const same = forms.get(stream.num);
    if (same) same.push(stream);
    else forms.set(stream.num, [stream]);
  }
  const costs = new Map<number, number | 'open'>();
  let edges = 0;

  const targets = (stream: WeighedStream, name: string, asForm: boolean): Iterable<number> => {
    const resources = asForm ? stream.dictionary.get('Resources') : undefined;
    if (resources?.kind === 'dict') {
      const xobjects = resources.entries.get('XObject');
      if (xobjects === undefined) return [];
      if (xobjects.kind === 'dict') {
        const named = xobjects.entries.get(name);
        return named?.kind === 'ref' && forms.has(named.num) ? [named.num] : [];
      }
    }
    return uses.bindings.get(name) ?? [];
  };
  const drawing = (stream: WeighedStream, asForm: boolean) => {
    let cost = stream.size;
    for (const [name, count] of stream.draws) {
      let costliest = 0;
      for (const target of targets(stream, name, asForm)) costliest = Math.max(costliest, costs.get(target) as number);
      cost = clamp(cost + count * costliest);
    }
    return cost;
  };
  /** Each form's cost, the forms it draws first: iterative, so a deep chain cannot overflow the stack. */
  const settle = (stream: WeighedStream, asForm: boolean) => {
    const stack: Array<{ num: number; open: boolean }> = [];
    const visit = (from: WeighedStream, fromForm: boolean) => {
      for (const name of from.draws.keys()) {
        for (const target of targets(from, name, fromForm)) {
          if (++edges > MAX_EDGES) throw refusals.pdfUncheckable('its forms draw one another too many ways');
          const state = costs.get(target);
          if (state === 'open') throw refusals.pdfFormCycle();
          if (state === undefined) stack.push({ num: target, open: false });
        }
      }
    };
    visit(stream, asForm);
    while (stack.length > 0) {
      const top = stack.at(-1)!;
      const state = costs.get(top.num);
      if (typeof state === 'number') {
        stack.pop();
      } else if (!top.open) {
        if (state === 'open') throw refusals.pdfFormCycle();
        top.open = true;
        costs.set(top.num, 'open');
        for (const form of forms.get(top.num)!) visit(form, true);
      } else {
        stack.pop();
        costs.set(
          top.num,
          forms.get(top.num)!.reduce((most, form) => Math.max(most, drawing(form, true)), 0),
        );
      }
    }
    return drawing(stream, asForm);
  };

  let mostUses = 1;
  for (const count of uses.contents.values()) mostUses = Math.max(mostUses, count);
  let weighed = 0;
  for (const stream of streams) {
    // A header this check cannot read may still be named by pages: it is weighed as the most used.
    const pages = stream.num === null ? mostUses : (uses.contents.get(stream.num) ?? 0);
    if (pages > 0) weighed = clamp(weighed + pages * settle(stream, false));
    else if (stream.filtered && !(stream.num !== null && forms.has(stream.num))) weighed = clamp(weighed + stream.size);
  }
  return weighed;
}
