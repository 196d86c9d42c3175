/**
 * The benchmarks' result table on stdout: `measure | result | aim` rows, the first two columns
 * padded to their widest cell, after a blank line.
 */
export function printRows(rows: string[][]): void {
  const widths = [0, 1].map((i) => Math.max(...rows.map((row) => row[i]!.length)));
  console.log();
  for (const row of rows)
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    );
}
