/** Prints rows as columns under a header line, each column as wide as its widest cell. */
export function printTable<K extends string>(
  header: Record<K, string>,
  rows: readonly Record<K, string>[],
): void {
  const columns = Object.keys(header) as K[];
  const widths = columns.map((column) => Math.max(...[header, ...rows].map((row) => row[column].length)));
  for (const row of [header, ...rows]) {
    console.log(
      columns
        .map((column, index) => row[column].padEnd(widths[index] ?? 0))
        .join('  ')
        .trimEnd(),
    );
  }
}
