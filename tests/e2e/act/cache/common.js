// Shared by main.js (restore) and post.js (save): inputs, the store, and the paths an entry holds.
const { execFileSync } = require("child_process");
const fs = require("fs");
const path = require("path");

function input(name) {
  return (process.env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] || "").trim();
}

function lines(text) {
  return text.split("\n").map((line) => line.trim()).filter(Boolean);
}

function store() {
  const dir = process.env.ACT_STANDIN_CACHE;
  if (!dir) throw new Error("the cache stand-in needs ACT_STANDIN_CACHE");
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

function entryFile(key) {
  if (!/^[A-Za-z0-9._-]+$/.test(key)) throw new Error(`cache key with unexpected characters: ${key}`);
  return path.join(store(), `${key}.tar.gz`);
}

// The existing files and directories `path` names (globs expanded by bash, `~` as $HOME).
function existingPaths() {
  const patterns = lines(input("path")).map((p) => p.replace(/^~(?=\/|$)/, process.env.HOME));
  const script = 'shopt -s nullglob; for p in "$@"; do for m in $p; do [ -e "$m" ] && printf "%s\\n" "$m"; done; done';
  return lines(execFileSync("bash", ["-c", script, "bash", ...patterns], { encoding: "utf8" }));
}

module.exports = { input, lines, store, entryFile, existingPaths, execFileSync, fs, path };
