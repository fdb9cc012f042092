// Save (the job succeeded: post-if): `path` under `key`, unless that entry was restored; atomically.
const { input, entryFile, existingPaths, execFileSync, fs } = require("./common.js");

const key = input("key");
if (process.env.STATE_matched === key) {
  console.log(`Cache hit occurred on the primary key ${key}, not saving cache.`);
} else {
  const found = existingPaths();
  if (found.length === 0) {
    console.log("::warning::Path Validation Error: no files to save");
  } else {
    const file = entryFile(key);
    const partial = `${file}.partial-${process.pid}`;
    execFileSync("tar", ["-C", "/", "-czf", partial, ...found.map((p) => p.replace(/^\//, ""))]);
    fs.renameSync(partial, file);
    console.log(`Cache saved with key: ${key} (${fs.statSync(file).size} bytes)`);
  }
}
