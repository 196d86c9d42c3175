/**
 * Plain-text tables: a header row, columns padded to their widest cell, two spaces between. On a
 * terminal the columns marked `shrink` are cut (with an ellipsis) so a row fits the width; piped
 * output keeps every character.
 */
export interface Column<Row> {
  header: string;
  value: (row: Row) => string;
  /** Right-aligned (numbers). */
  right?: boolean;
  /** May be cut to fit the terminal's width. */
  shrink?: boolean;
}

const GAP = '  ';

export function renderTable<Row>(rows: readonly Row[], columns: readonly Column<Row>[], width?: number): string {
  const cells = rows.map((row) => columns.map((column) => oneLine(column.value(row))));
  const widths = columns.map((column, i) => Math.max(length(column.header), ...cells.map((line) => length(line[i]!))));
  if (width !== undefined) fit(widths, columns, width);
  const render = (line: string[]) =>
    line
      .map((cell, i) => {
        const cut = truncate(cell, widths[i]!);
        const pad = ' '.repeat(widths[i]! - length(cut));
        return columns[i]!.right ? pad + cut : i === line.length - 1 ? cut : cut + pad;
      })
      .join(GAP);
  return [render(columns.map((column) => column.header)), ...cells.map(render)].join('\n');
}

/** Shrinks the `shrink` columns, widest first, until the row fits `width` (never below 8 characters). */
function fit<Row>(widths: number[], columns: readonly Column<Row>[], width: number): void {
  const total = () => widths.reduce((sum, w) => sum + w, 0) + GAP.length * (widths.length - 1);
  while (total() > width) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++) if (columns[i]!.shrink && widths[i]! > 8 && (widest < 0 || widths[i]! > widths[widest]!)) widest = i;
    if (widest < 0) return;
    widths[widest] = Math.max(8, widths[widest]! - (total() - width));
  }
}

/** Table cells are one line: newlines and tabs become spaces, runs of blanks one space. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Length in code points, so a cut never splits a surrogate pair. */
function length(text: string): number {
  return [...text].length;
}

function truncate(text: string, width: number): string {
  const points = [...text];
  return points.length <= width ? text : `${points.slice(0, Math.max(0, width - 1)).join('')}…`;
}
