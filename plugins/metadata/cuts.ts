// The byte ranges an image cleaner cuts, kept as few as the file allows: a range that starts where the last one
// ended extends it, so a run of metadata items (a flood of empty tEXt chunks or COM segments) is one range,
// not one per item.

/** Adds [start, end) to `cuts` (in file order), merged into the last range when they touch. */
export function cutRange(cuts: Array<[number, number]>, start: number, end: number): void {
  const last = cuts[cuts.length - 1];
  if (last && last[1] === start) last[1] = end;
  else cuts.push([start, end]);
}
