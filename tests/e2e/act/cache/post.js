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
    // Relative to HOME, as actions/cache keeps `~/...` paths: a later job with another HOME gets them.
    const home = process.env.HOME.replace(/\/+$/, "");
    const outside = found.filter((p) => !p.startsWith(`${home}/`));
    if (outside.length) throw new Error(`the cache stand-in keeps paths under HOME only: ${outside.join(", ")}`);
    const file = entryFile(key);
    const partial = `${file}.partial-${process.pid}`;
    execFileSync("tar", ["-C", home, "-czf", partial, ...found.map((p) => p.slice(home.length + 1))]);
    fs.renameSync(partial, file);
    console.log(`Cache saved with key: ${key} (${fs.statSync(file).size} bytes)`);
  }
}
