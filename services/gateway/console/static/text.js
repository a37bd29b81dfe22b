// Sonde console: how text from the server is shown. Loaded before app.js.
//
// Text from the server is the database's and the model's: besides markup
// (which the console never parses), it can hold bidirectional controls that
// a browser obeys rather than shows. U+202E (right-to-left override) turns
// "gnp.exe" into "exe.png" on screen and reverses a whole cell; embeddings,
// isolates and marks reorder what follows them. Every string the console
// renders goes through visible(), which replaces each such control with a
// mark naming it, [U+202E], so the text reads in the order it is stored and
// the reader sees that something was there.
'use strict';

(() => {
  // The explicit bidi formatting characters: the embeddings and overrides
  // U+202A–U+202E, the isolates U+2066–U+2069, and the implicit marks
  // U+200E (LRM), U+200F (RLM) and U+061C (ALM).
  const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

  function mark(c) {
    return '[U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + ']';
  }

  // visible returns s as a string with every bidi control replaced by its
  // mark; any other text is returned unchanged.
  function visible(s) {
    const t = String(s);
    return t.replace(BIDI, mark);
  }

  globalThis.SondeText = Object.freeze({ visible });
})();
