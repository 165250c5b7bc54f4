// "Paste your error" (md:atlas in scripts/atlas.py): the page embeds every atlas case of the site, each with
// its registry ids and its messages normalised; a pasted message is normalised by the same rules as
// scripts/atlas.py `normalise`, and the cases are ranked: an id in common first, then the weighted share of
// the case's words the message holds. Everything runs here, in the browser; nothing is sent anywhere.
(function () {
  if (window.mlcAtlas) return;  // loaded once, however many atlases a page holds

  var ID = /\bgb(\d{4})\b/g;
  var DROPS = [
    /https?:\/\/\S+/g,  // links (the registry link's id is read first)
    /(?:[a-z]:)?[\w.~+-]*[\/\\][\w.~+\/\\-]*/g,  // paths, with or without a drive
    /0x[0-9a-f]+/g,  // addresses
    /\d+/g,  // line numbers, sizes, ids
    /[^a-z_]+/g  // quotes, backticks, punctuation
  ];
  var SHOWN = 5, LEAST = 0.05;

  function ids(text) {
    var found = [], match;
    var lower = text.toLowerCase();
    ID.lastIndex = 0;
    while ((match = ID.exec(lower)) !== null) {
      var id = "GB" + match[1];
      if (found.indexOf(id) < 0) found.push(id);
    }
    return found;
  }

  function normalise(text) {
    var out = text.toLowerCase();
    DROPS.forEach(function (pattern) { out = out.replace(pattern, " "); });
    return out.split(/\s+/).map(function (w) { return w.replace(/^_+|_+$/g, ""); })
      .filter(function (w) { return w.length > 1; }).join(" ");
  }

  function words(text) { return text ? text.split(" ") : []; }

  // Each case's documents (its messages, and its name with what it does), and each word's weight: rarer
  // words across all documents weigh more.
  function index(entries) {
    var docs = [], df = {};
    entries.forEach(function (entry, i) {
      entry.messages.concat([entry.words]).forEach(function (text) {
        var set = {};
        words(text).forEach(function (w) { set[w] = true; });
        Object.keys(set).forEach(function (w) { df[w] = (df[w] || 0) + 1; });
        docs.push({entry: i, set: set});
      });
    });
    var weight = {};
    Object.keys(df).forEach(function (w) { weight[w] = Math.log(1 + docs.length / df[w]); });
    docs.forEach(function (doc) {
      doc.norm = Math.sqrt(Object.keys(doc.set).reduce(function (s, w) { return s + weight[w] * weight[w]; }, 0));
    });
    return {docs: docs, weight: weight};
  }

  function rank(entries, built, text) {
    var query = {}, known = 0;
    words(normalise(text)).forEach(function (w) { if (built.weight[w] !== undefined) query[w] = true; });
    Object.keys(query).forEach(function (w) { known += built.weight[w] * built.weight[w]; });
    known = Math.sqrt(known);
    var pasted = ids(text);
    var scores = entries.map(function () { return 0; });
    built.docs.forEach(function (doc) {
      if (!known || !doc.norm) return;
      var shared = 0;
      Object.keys(query).forEach(function (w) { if (doc.set[w]) shared += built.weight[w] * built.weight[w]; });
      scores[doc.entry] = Math.max(scores[doc.entry], shared / (known * doc.norm));
    });
    entries.forEach(function (entry, i) {
      if (entry.ids.some(function (id) { return pasted.indexOf(id) >= 0; })) scores[i] += 1;
    });
    return entries.map(function (entry, i) { return {entry: entry, score: scores[i]}; })
      .filter(function (hit) { return hit.score >= LEAST; })
      .sort(function (a, b) { return b.score - a.score; }).slice(0, SHOWN);
  }

  function show(list, hits, typed) {
    list.textContent = "";
    if (!typed) return;
    if (!hits.length) {
      var none = document.createElement("li");
      none.textContent = "No case matches. Paste the lines from the message's first line to its link.";
      list.appendChild(none);
      return;
    }
    hits.forEach(function (hit) {
      var e = hit.entry, item = document.createElement("li"), link = document.createElement("a");
      item.dataset.case = e.case;
      link.href = e.href;
      link.textContent = e.what;
      item.appendChild(link);
      var code = document.createElement("code");
      code.textContent = e.case;
      var releases = Object.keys(e.breaks).sort().map(function (r) {
        return r + (e.breaks[r] ? " yes" : " no");
      }).join(", ");
      item.appendChild(document.createTextNode(" ("));
      item.appendChild(code);
      item.appendChild(document.createTextNode(
        ", " + e.kind.toLowerCase() + (e.ids.length ? ", " + e.ids.join(", ") : "") + "). Fix: " + e.fix +
        ". On torch " + releases + "."));
      list.appendChild(item);
    });
  }

  // A link into the folded messages opens the fold it lands in.
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    target.scrollIntoView();
  }

  function start() {
    var data = document.getElementById("mlc-atlas-data");
    if (!data) return;
    var entries = JSON.parse(data.textContent), built = index(entries);
    document.querySelectorAll(".mlc-atlas-lookup").forEach(function (box) {
      var input = box.querySelector("textarea"), list = box.querySelector(".mlc-atlas-hits"), timer = null;
      function update() {
        var text = input.value.trim();
        show(list, text ? rank(entries, built, text) : [], text);
        box.dataset.ranked = String(Number(box.dataset.ranked || 0) + 1);  // tests wait on it
      }
      input.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(update, 120);
      });
      box.dataset.ready = "true";
    });
    window.addEventListener("hashchange", reveal);
    reveal();
  }

  window.mlcAtlas = {normalise: normalise, ids: ids, rank: rank};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
