/**
 * FILE-3: a conversation's turns are trees, each recorded with the turn it follows (or forks
 * from). A turn reads the files of the turns before it: the chain of previous turns back to
 * the first, never a later turn's and never another branch's.
 */

/**
 * The trees of the turns before `tree`, nearest first, from a conversation's record (turn tree
 * to previous turn's tree, "" for the first). A previous turn that is not a recorded turn of
 * the same conversation ends the chain, so a start cannot name any tree as its previous turn.
 */
export function earlierTurns(turns: Readonly<Record<string, string>>, tree: string): string[] {
  const out: string[] = [];
  const seen = new Set([tree]);
  let previous = turns[tree];
  while (previous && Object.hasOwn(turns, previous) && !seen.has(previous)) {
    out.push(previous);
    seen.add(previous);
    previous = turns[previous];
  }
  return out;
}
