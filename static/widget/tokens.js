/* revtx-book widget: Tokens: ids 0–9 are the letters a–j, 10 is `|` (the separator), 11 is `.` (pad);
 * and the tasks the widget can run. */

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

/** The tasks the widget runs (the engine's `Task` in crates/revtx-spec/src/task.rs, for
 * those that answer a string of letters with as many letters): the answer, and words
 * for the verdict. */
export const TASKS = {
  reverse: { answer: reversed, done: "reversed", what: "the reversal" },
  copy: { answer: (text) => text, done: "copied", what: "the copy" },
  sort: { answer: (text) => Array.from(text).sort().join(""), done: "sorted", what: "the sorted string" },
};

/** The task of a manifest entry (the chapter's when the entry names none). */
export function taskOf(entry) {
  const name = entry.task ?? "reverse";
  const task = TASKS[name];
  if (!task) throw new Error(`the widget cannot run the task "${name}"`);
  return { name, ...task };
}
