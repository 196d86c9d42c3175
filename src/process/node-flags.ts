/**
 * V8 flags of the service's processes (`serve` and the children it forks). Under a high
 * allocation rate V8 grows the young generation to its maximum (semi-spaces of tens of MiB on a
 * machine with this much memory) and keeps it, with the old generation's free pages, once the load
 * stops: under the soak (bench/soak.ts) the API's V8 heap went from 121 to 272 MiB (RSS 202 → 405)
 * and stayed there idle. With 4 MiB semi-spaces it stayed at 142 MiB (RSS 283) at the same request
 * rate (docs/benchmarks.md, "Memory"). A smaller young generation means more frequent, shorter
 * scavenges; the API's objects are short-lived requests, so few survive them.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];

/** `execArgv` with the service's flags (a flag given explicitly by the operator wins). */
export function withServiceFlags(execArgv: readonly string[]): string[] {
  const given = (flag: string) => execArgv.some((arg) => arg.startsWith(flag.split('=')[0]!));
  return [...execArgv, ...SERVICE_NODE_FLAGS.filter((flag) => !given(flag))];
}
