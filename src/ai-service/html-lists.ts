/**
 * List and quotation formatters for html-to-text that keep its output linear in its input.
 * html-to-text's own list formatter indents every line of an item again at every enclosing level
 * (BlockTextBuilder.closeListItem), and its blockquote prefixes every line with "> " again at
 * every level, before the character limit can be applied: 250 nested lists around 100 000 short
 * items (1 MB of HTML) build a 75-million-character string, rebuilt 250 times. Here an item's
 * marker is written once, in front of its first line, and nested content is not indented: the
 * text is read for search and questions, where the indentation carried nothing. Roman numerals
 * past 3 999 (which html-to-text writes as thousands of Ms) fall back to decimal.
 */
import type { FormatCallback } from 'html-to-text';

type Element = Parameters<FormatCallback>[0] & { parent?: { name?: string } | null; attribs?: Record<string, string> };

/** The largest number written in Roman numerals (MMMCMXCIX). */
const LARGEST_ROMAN = 3999;

function list(nextMarker: () => string): FormatCallback {
  return (elem, walk, builder) => {
    const nested = (elem as Element).parent?.name === 'li';
    builder.openBlock({ leadingLineBreaks: nested ? 1 : 2 });
    for (const child of elem.children ?? []) {
      if (child.type === 'text' && /^\s*$/.test((child as { data?: string }).data ?? '')) continue;
      builder.openBlock({ leadingLineBreaks: 1 });
      if ((child as Element).name === 'li') builder.addInline(nested ? nextMarker().trimStart() : nextMarker(), { noWordTransform: true });
      walk((child as Element).name === 'li' ? (child.children ?? []) : [child], builder);
      builder.closeBlock({ trailingLineBreaks: 1 });
    }
    builder.closeBlock({ trailingLineBreaks: nested ? 1 : 2 });
  };
}

export const unorderedList: FormatCallback = (elem, walk, builder, options) => list(() => (options as { itemPrefix?: string }).itemPrefix ?? ' * ')(elem, walk, builder, options);

export const orderedList: FormatCallback = (elem, walk, builder, options) => {
  const attributes = (elem as { attribs?: Record<string, string> }).attribs ?? {};
  const start = Number(attributes.start ?? '1');
  let next = Number.isSafeInteger(start) ? start : 1;
  const type = attributes.type ?? '1';
  return list(() => ` ${marker(next++, type)}. `)(elem, walk, builder, options);
};

/** Quotations as plain blocks: the "> " html-to-text repeats on every line at every level is dropped. */
export const quotation: FormatCallback = (elem, walk, builder) => {
  builder.openBlock({ leadingLineBreaks: 2 });
  walk(elem.children ?? [], builder);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

function marker(index: number, type: string): string {
  if ((type === 'i' || type === 'I') && index >= 1 && index <= LARGEST_ROMAN) {
    const roman = toRoman(index);
    return type === 'i' ? roman.toLowerCase() : roman;
  }
  if ((type === 'a' || type === 'A') && index >= 1) {
    let letters = '';
    for (let rest = index; rest > 0; rest = Math.floor((rest - 1) / 26)) letters = String.fromCharCode(65 + ((rest - 1) % 26)) + letters;
    return type === 'a' ? letters.toLowerCase() : letters;
  }
  return String(index);
}

function toRoman(value: number): string {
  const numerals: Array<[number, string]> = [
    [1000, 'M'],
    [900, 'CM'],
    [500, 'D'],
    [400, 'CD'],
    [100, 'C'],
    [90, 'XC'],
    [50, 'L'],
    [40, 'XL'],
    [10, 'X'],
    [9, 'IX'],
    [5, 'V'],
    [4, 'IV'],
    [1, 'I'],
  ];
  let text = '';
  for (const [amount, numeral] of numerals) for (; value >= amount; value -= amount) text += numeral;
  return text;
}
