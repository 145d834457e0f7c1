/* revtx-book widget: Tokens: ids 0–9 are the letters a–j, 10 is `|` (the separator), 11 is `.` (pad). */

/* 1. Tokens ---------------------------------------------------------------- */

export const LETTERS = "abcdefghij";
export const SEP = 10;
export const PAD = 11;

export function tokenChar(id) {
  if (id >= 0 && id < LETTERS.length) return LETTERS[id];
  return id === SEP ? "|" : id === PAD ? "." : "?";
}

/** Letter ids of a string of a–j (other characters are an error). */
export function lettersToIds(text) {
  const ids = [];
  for (const ch of text) {
    const id = LETTERS.indexOf(ch);
    if (id < 0) throw new Error(`"${ch}" is not one of the letters a–j`);
    ids.push(id);
  }
  return ids;
}

export function reversed(text) {
  return Array.from(text).reverse().join("");
}
