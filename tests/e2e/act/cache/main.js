// Restore: the entry of `key`, else the newest entry whose key starts with a line of `restore-keys`.
const { input, lines, store, entryFile, execFileSync, fs, path } = require("./common.js");

const key = input("key");
let matched = fs.existsSync(entryFile(key)) ? key : "";
if (!matched) {
  const entries = fs.readdirSync(store())
    .filter((name) => name.endsWith(".tar.gz"))
    .map((name) => ({ key: name.slice(0, -".tar.gz".length), time: fs.statSync(path.join(store(), name)).mtimeMs }))
    .sort((a, b) => b.time - a.time);
  for (const prefix of lines(input("restore-keys"))) {
    const found = entries.find((entry) => entry.key.startsWith(prefix));
    if (found) {
      matched = found.key;
      break;
    }
  }
}
if (matched) {
  execFileSync("tar", ["-C", process.env.HOME, "-xzf", entryFile(matched)]);
  console.log(`Cache restored from key: ${matched}`);
} else {
  console.log(`Cache not found for input keys: ${[key, ...lines(input("restore-keys"))].join(", ")}`);
}
fs.appendFileSync(process.env.GITHUB_STATE, `matched=${matched}\n`);
fs.appendFileSync(process.env.GITHUB_OUTPUT, `cache-hit=${matched === key}\n`);
