// "Paste your message" (md:atlas in scripts/atlas.py): the page embeds every atlas case of the site, each with
// its registry ids and its messages normalised, and every id of the graph-break registry that the build's
// torch ships (its short name, explanation and hints). A pasted message is normalised by the same rules as
// scripts/atlas.py `normalise`. Its registry id is read from the link, the typed id or the short name the
// message begins with (older releases print no link); the registry's own entry for it is shown, with its page.
// Cases of that id are ranked by the words the message holds beyond the id's own wording (the called
// function, the code line); a case is shown as a match only above a threshold a wrong case did not reach on
// the held-out messages of tests/atlas_heldout.json, else "no case matches" and the closest. Messages with no
// id (recompiles) are ranked by all their words, with their own threshold. Everything runs here, in the
// browser; nothing is sent anywhere.
(function (root) {
  if (root.mlcAtlas) return;  // loaded once, however many atlases a page holds

  var ID = /\bgb(\d{4})\b/g;
  var DROPS = [
    /https?:\/\/\S+/g,  // links (the registry link's id is read first)
    /(?:[a-z]:)?[\w.~+-]*[\/\\][\w.~+\/\\-]*/g,  // paths, with or without a drive
    /0x[0-9a-f]+/g,  // addresses
    /\d+/g,  // line numbers, sizes, ids
    /[^a-z_]+/g  // quotes, backticks, punctuation
  ];
  // Words every message has, whatever its break: the parts' names, the log's and the error's framing.
  var FRAME = ("graph break encountered when attempting to trace explanation hint hints developer debug context " +
    "for more details about this please visit reason in user code at from set torchdynamo_verbose for the " +
    "internal stack trace especially if you re reporting bug to pytorch even set torch_logs dynamo torch " +
    "_dynamo exc unsupported call function e.g. a an of is it on with by or and not be this that line file " +
    "traceback most recent last warn warning symbolic_convert failed handle gracefully skipping falling back " +
    "eager").split(" ");
  var SHOWN = 5;
  var KEYS_LEAST = 0.5;  // a case of the message's id matches if it holds this share of the message's keys
  var OTHER_ID = 0.75;  // a case of another id matches if it holds this share of the names the message quotes
  var NO_ID = 0.5;  // a case matches a message with no id and no guard above this share of words in common

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

  // What tells a message apart from others of its id (scripts/atlas.py `keys`, the same rules): the names it
  // quotes, and the source line under its last File line; for a recompile, the shape of the guard that failed.
  var PREFIX = /^(?:\[rank\d+\]:)?[A-Z]\d{4} [\d:.]+\s+\d+ \S+\] (?:\[[^\]]*\] )*/;
  var SPANS = [/`([^`\n]+)`/g, /qualname: ([\w.<>]+)/g, /module: ([\w.]+)/g, /<function ([\w.<>]+) at/g,
    /method (\w+) of class (\w+)/g, /argument types \[([^\]\n]*)\]/g, /attempting to trace (\w+)/g];
  var CODE = /code: (.*)$/;
  var FILE_LINE = /^\s*File "[^"]*", line \d+, in /;
  var GUARD = /^\s*- \d+\/\d+: (.*?)(?:\s+#.*)?$/;
  var COMPARE = /^(\S+(?: \S+)*?) (==|!=|<=|>=|<|>) (\S+)$/;
  var STOP = setOf(("torch dynamo config tensor tensors self the variable variables true false none return def fn " +
    "function call calls in of to is and or not for if_ with as at from by this that be it an on").split(" "));

  function namesOf(text) {
    return text.toLowerCase().split(/[^a-z0-9_]+/).map(function (w) { return w.replace(/^_+|_+$/g, ""); })
      .filter(function (w) { return w.length > 1 && !/^\d+$/.test(w) && !STOP[w] && !/^0x[0-9a-f]+$/.test(w); });
  }

  function guardKey(expr) {
    expr = expr.trim();
    var found = /tensor '[^']*' ([\w ]+?) mismatch/.exec(expr);
    if (found) return "guard_tensor_" + found[1].split(/\s+/).filter(Boolean).join("_");
    found = /GLOBAL_STATE changed: (\w+)/.exec(expr);
    if (found) return "guard_global_" + found[1].toLowerCase();
    if (/___check_obj_id|___check_type_id|\bid\(/.test(expr)) return "guard_id";
    if (/dict\.keys|\.keys\(\)/.test(expr)) return "guard_dict_keys";
    if (expr.indexOf("len(") === 0) return "guard_len";
    found = COMPARE.exec(expr);
    if (!found) return null;
    var left = found[1], right = found[3], kind;
    if (/^-?\d+$/.test(left) && right.indexOf("size()") >= 0) return "guard_size_bound";
    if (/^-?\d+\.\d*(?:e-?\d+)?$/.test(right)) kind = "float";
    else if (/^-?\d+$/.test(right)) kind = "int";
    else if (right === "True" || right === "False") kind = "bool";
    else if (right === "None") kind = "none";
    else kind = "other";
    var where = left.indexOf("G[") === 0 ? "global" : /[.\[]/.test(left) ? "attr" : "local";
    return "guard_" + where + "_" + kind;
  }

  // {names: what the message quotes (and its guard), code: the words of the line where it broke}.
  function keyParts(text) {
    var names = [], code = [], codeNext = false;
    text.split(/\r\n|\r|\n/).forEach(function (raw) {
      var line = raw.replace(PREFIX, "");
      if (codeNext && line.trim()) code = namesOf(line);
      var branch = CODE.exec(line);
      if (branch) code = namesOf(branch[1]);
      codeNext = FILE_LINE.test(line);
      var guard = GUARD.exec(line);
      if (guard) {
        var key = guardKey(guard[1]);
        if (key) names.push(key);
        var at = /mismatch at index (\d+)/.exec(guard[1]);
        if (at) names.push("guard_at_index_" + at[1]);  // a transpose fails at 0, channels_last at 1
        return;
      }
      if (/^\s*Hint:/.test(line)) return;  // hints are the registry's wording, the same for every cause
      SPANS.forEach(function (pattern) {
        pattern.lastIndex = 0;
        var found;
        while ((found = pattern.exec(line)) !== null) {
          for (var g = 1; g < found.length; g++) {
            if (found[g] && !/[\/\\]/.test(found[g])) names = names.concat(namesOf(found[g]));
          }
          if (found[0] === "") pattern.lastIndex++;
        }
      });
    });
    if (/hit config\.(?:recompile_limit|cache_size_limit)/.test(text)) names.push("guard_limit");
    return {names: unique(names), code: unique(code)};
  }

  function unique(list) {
    var seen = {};
    return list.filter(function (w) { return seen[w] ? false : (seen[w] = true); });
  }

  function keys(text) {
    var parts = keyParts(text);
    return unique(parts.names.concat(parts.code));
  }

  function setOf(list) {
    var set = {};
    list.forEach(function (w) { set[w] = true; });
    return set;
  }

  // The registry: each id's words (its short names, explanation, hints), and the ids by short name.
  function registryIndex(registry) {
    var byType = [], template = {};
    Object.keys(registry).forEach(function (id) {
      var entry = registry[id];
      var types = [entry[0]].concat(entry[3] || []);
      types.forEach(function (t) { if (t.length > 6) byType.push({type: t.toLowerCase(), id: id}); });
      template[id] = setOf(words(normalise(types.join(" ") + " " + entry[1] + " " + entry[2].join(" "))));
    });
    byType.sort(function (a, b) { return b.type.length - a.type.length; });
    return {byType: byType, template: template};
  }

  // The id a message carries: its link's or a typed one, else the longest registry short name it holds.
  function idOf(reg, text) {
    var found = ids(text);
    if (found.length) return found[0];
    var lower = text.toLowerCase();
    for (var i = 0; i < reg.byType.length; i++) {
      if (lower.indexOf(reg.byType[i].type) >= 0) return reg.byType[i].id;
    }
    return null;
  }

  // Each case's documents (its messages, and its name with what it does) and each word's weight: rarer words
  // across all documents weigh more.
  function index(entries) {
    var docs = [], df = {};
    entries.forEach(function (entry, i) {
      entry.messages.concat([entry.words]).forEach(function (text, j) {
        var set = setOf(words(text));
        Object.keys(set).forEach(function (w) { df[w] = (df[w] || 0) + 1; });
        docs.push({entry: i, set: set, message: j < entry.messages.length});
      });
    });
    var weight = {};
    Object.keys(df).forEach(function (w) { weight[w] = Math.log(1 + docs.length / df[w]); });
    return {docs: docs, weight: weight, frame: setOf(FRAME)};
  }

  // The weighted share of the query's words a document holds, and of the document's the query holds
  // (the geometric mean: a cosine over word sets), leaving out the words `skip` holds.
  function similarity(built, query, doc, skip) {
    var q = 0, d = 0, shared = 0;
    function w(word) { return built.weight[word] || Math.log(1 + built.docs.length); }
    Object.keys(query).forEach(function (word) {
      if (skip[word]) return;
      q += w(word) * w(word);
      if (doc.set[word]) shared += w(word) * w(word);
    });
    Object.keys(doc.set).forEach(function (word) { if (!skip[word]) d += w(word) * w(word); });
    return q && d ? shared / Math.sqrt(q * d) : 0;
  }

  // Each case's keys and each key's weight: keys fewer cases hold weigh more; a key no case holds, the most.
  function keyIndex(entries) {
    var df = {};
    entries.forEach(function (e) { unique(e.keys || []).forEach(function (k) { df[k] = (df[k] || 0) + 1; }); });
    var most = Math.log(1 + entries.length), weight = {};
    Object.keys(df).forEach(function (k) { weight[k] = Math.log(1 + entries.length / df[k]); });
    return {weight: function (k) { return weight[k] || most; }, known: function (k) { return !!weight[k]; }};
  }

  // The weighted share of the message's keys a case holds.
  function coverage(kx, query, caseKeys) {
    var all = 0, shared = 0;
    query.forEach(function (k) {
      var w = kx.weight(k);
      all += w * w;
      if (caseKeys[k]) shared += w * w;
    });
    return all ? shared / all : 0;
  }

  // {id, registry entry, hits: [{entry, score}], match: whether the first hit is a match, shared: whether the
  // match rests on the id alone, skipped: whether the message says a whole frame fell back to eager}.
  function rank(data, prep, text) {
    var entries = data.cases, reg = prep.reg, built = prep.built, id = idOf(reg, text);
    var query = setOf(words(normalise(text)));
    var parts = keyParts(text), hits, match = false, shared = false;
    function cosine(entry) {
      var best = 0;
      built.docs.forEach(function (doc) {
        if (entries[doc.entry] === entry) best = Math.max(best, similarity(built, query, doc, built.frame));
      });
      return best;
    }
    if (id) {
      var mine = entries.filter(function (e) { return e.ids.indexOf(id) >= 0; });
      // The id's own wording (its registry entry) tells nothing apart; a name fewer of its cases quote tells
      // more, one none of them quotes (another function) the most.
      var entry = data.registry[id], template = {}, counts = {};
      if (entry) namesOf([entry[0]].concat(entry[3], [entry[1]]).join(" ")).forEach(function (k) {
        template[k] = true;
      });
      mine.forEach(function (e) { unique(e.keys || []).forEach(function (k) { counts[k] = (counts[k] || 0) + 1; }); });
      var inId = {weight: function (k) { return Math.log(1 + mine.length / (counts[k] || 1)) + (counts[k] ? 0 : 1); }};
      var names = parts.names.filter(function (k) { return !template[k]; });
      var telling = names.some(function (k) { return (counts[k] || 0) < mine.length; });
      var code = parts.code.filter(function (k) { return prep.kx.known(k); });  // a user's own names tell nothing
      var keyword = ["if", "while"].filter(function (k) { return code.indexOf(k) >= 0; })[0];
      var said = setOf(parts.names.concat(parts.code));
      hits = mine.map(function (e) {
        var own = setOf((e.code || []).concat(namesOf(e.what))), penalty = 1;
        if (keyword === "if" ? own["while"] : keyword === "while" && !own["while"]) penalty = 0;  // a loop or not
        var caseName = namesOf(e.case.replace(/_/g, " "));
        return {entry: e, score: telling ? coverage(inId, names, setOf(e.keys || [])) * penalty : 0,
                code: coverage(prep.kx, code, own) * penalty,
                name: caseName.filter(function (w) { return said[w]; }).length / (caseName.length || 1),
                words: cosine(e)};
      }).sort(function (a, b) {
        return b.score - a.score || b.code - a.code || b.name - a.name || b.words - a.words;
      });
      if (hits.length && (hits[0].score >= KEYS_LEAST || mine.length === 1)) match = true;
      else if (hits.length && !telling) {
        // Nothing in the message beyond what every case of its id says: the id decides, its code line ranks.
        match = shared = true;
      } else {
        // A name the message quotes may belong to a case of another id (the same call, another release's id).
        var other = entries.filter(function (e) { return mine.indexOf(e) < 0; }).map(function (e) {
          return {entry: e, score: coverage(prep.kx, names, setOf(e.keys || [])), code: 0, words: cosine(e)};
        }).sort(function (a, b) { return b.score - a.score || b.words - a.words; });
        if (other.length && other[0].score >= OTHER_ID) {
          hits = other;
          match = true;
        }
      }
    } else if (parts.names.some(function (k) { return k.indexOf("guard_") === 0; })) {
      var guards = parts.names.filter(function (k) { return k.indexOf("guard_") === 0; });
      hits = entries.map(function (e) {
        var held = guards.filter(function (k) { return (e.keys || []).indexOf(k) >= 0; });
        // The failed guard's kind decides; where it fails (a stride's index) tells its cases apart.
        return {entry: e, score: held.indexOf(guards[0]) >= 0 ? 1 : 0, detail: held.length, words: cosine(e)};
      }).sort(function (a, b) { return b.score - a.score || b.detail - a.detail || b.words - a.words; });
      match = hits[0].score > 0;
    } else {
      hits = entries.map(function (e) { var c = cosine(e); return {entry: e, score: c, words: c}; })
        .sort(function (a, b) { return b.score - a.score; });
      match = hits.length > 0 && hits[0].score >= NO_ID;
    }
    var found = id && data.registry[id];
    var said = found ? [found[0], found[1], found[2].map(function (h) { return data.hints[h]; }), found[3]] : null;
    return {id: id, registry: said, hits: hits.slice(0, SHOWN), match: match,
            shared: shared, skipped: text.indexOf("Failed to handle graph break gracefully") >= 0,
            site: data.site};
  }

  function add(parent, tag, text, cls) {
    var node = document.createElement(tag);
    if (text) node.textContent = text;
    if (cls) node.className = cls;
    parent.appendChild(node);
    return node;
  }

  function describe(item, hit) {
    var e = hit.entry, link = add(item, "a", e.what);
    item.dataset.case = e.case;
    link.href = e.href;
    var releases = Object.keys(e.breaks).sort().map(function (r) {
      return r + (e.breaks[r] ? " yes" : " no");
    }).join(", ");
    item.appendChild(document.createTextNode(" ("));
    add(item, "code", e.case);
    item.appendChild(document.createTextNode(
      ", " + e.kind.toLowerCase() + (e.ids.length ? ", " + e.ids.join(", ") : "") + "). Fix: " + e.fix +
      (e.changes ? " (it changes the program: " + e.changes + ")" : "") + ". On torch " + releases + "."));
  }

  function show(box, list, result, typed) {
    list.textContent = "";
    var about = box.querySelector(".mlc-atlas-id");
    if (about) about.textContent = "";
    box.dataset.outcome = "";
    if (!typed) return;
    if (about && result.id) {
      var head = add(about, "p");
      var link = add(head, "a", result.id);
      link.href = result.site + "gb" + result.id.slice(2) + ".html";
      link.rel = "noopener";
      if (result.registry) {
        add(head, "strong", " " + result.registry[0]);
        if (result.registry[1]) head.appendChild(document.createTextNode(": " + result.registry[1]));
        result.registry[2].forEach(function (hint) { add(about, "p", "Hint: " + hint, "mlc-atlas-hint"); });
      } else {
        head.appendChild(document.createTextNode(": not in the registry of the torch this site was built with."));
      }
    }
    if (about && result.skipped) {
      add(about, "p", "The message says Dynamo skipped the whole function (\"falling back to eager\"): none of " +
        "it was compiled, which is worse than a graph break.", "mlc-atlas-skipped");
    }
    if (about && result.match && result.shared && result.hits.length > 1) {
      add(about, "p", "Nothing in the message tells the cases of " + result.id + " below apart; the first is " +
        "the closest to the code line you pasted, if any.", "mlc-atlas-shared");
    }
    if (result.match) {
      box.dataset.outcome = "match";
      result.hits.filter(function (hit, i) {
        return i === 0 || (result.shared ? true : hit.score >= result.hits[0].score);
      }).forEach(function (hit) { describe(add(list, "li"), hit); });
      return;
    }
    box.dataset.outcome = "none";
    var none = add(list, "li", "", "mlc-atlas-none");
    if (result.id && !result.hits.length) {
      none.textContent = result.id + " is not in this atlas: no case here printed it. The registry's entry " +
        "above, and its page, are what is known about it.";
    } else {
      var closest = result.hits.length && (result.id || result.hits[0].score > 0);
      none.textContent = "No case matches" + (closest ? "; the closest, not a match: " : ".");
      if (closest) {
        var link = add(none, "a", result.hits[0].entry.what);
        link.href = result.hits[0].entry.href;
        none.dataset.closest = result.hits[0].entry.case;
      }
      if (!result.id) {
        none.appendChild(document.createTextNode(
          " Paste the lines from the message's first line to its link."));
      }
    }
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

  function prepare(data) {
    return {built: index(data.cases), reg: registryIndex(data.registry), kx: keyIndex(data.cases)};
  }

  function start() {
    var node = document.getElementById("mlc-atlas-data");
    if (!node) return;
    var data = JSON.parse(node.textContent), ready = prepare(data);
    document.querySelectorAll(".mlc-atlas-lookup").forEach(function (box) {
      var input = box.querySelector("textarea"), list = box.querySelector(".mlc-atlas-hits"), timer = null;
      function update() {
        var text = input.value.trim();
        show(box, list, text ? rank(data, ready, text) : null, text);
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

  root.mlcAtlas = {
    normalise: normalise, ids: ids, keys: keys, prepare: prepare,
    lookup: function (data, ready, text) { return rank(data, ready, text); }
  };
  if (typeof document === "undefined") return;  // loaded outside a page (tests run it in node too)
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})(typeof window !== "undefined" ? window : globalThis);
