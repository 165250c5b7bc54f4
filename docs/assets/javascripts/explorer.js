// The compiler explorer (md:explorer in scripts/directives.py): for the chosen target, each stage's lines
// are fetched from the record (one file per stage, each line "source line<TAB>text"), and hovering or
// focusing a line highlights every line, in every stage and in the Python, that carries the same source line.
(function () {
  // A tile product in each stage: TTIR's tt.dot, TTGIR's warpgroup and tcgen05 ops, the PTX of each generation
  // (also inline in LLVM IR), and the SASS the cost table counts as tensor-core instructions.
  var TENSOR_CORE = /\btt\.dot\b|warp_group_dot|tc_gen5_mma|\bmma\.sync|wgmma\.mma_async|tcgen05\.mma\b|\b(HMMA|HGMMA|IMMA|QGMMA|UTC\w*MMA)\b/;

  function lineElement(src, text) {
    var span = document.createElement("span");
    span.className = "mlc-x-line";
    span.textContent = text || " ";
    if (src !== "-") span.dataset.src = src;
    return span;
  }

  function highlight(explorer, src) {
    explorer.mlcSource = src;  // a target loaded later lights the same source line again
    explorer.querySelectorAll(".mlc-x-line.is-hl").forEach(function (e) { e.classList.remove("is-hl"); });
    if (!src) return;
    explorer.querySelectorAll('.mlc-x-line[data-src="' + src + '"]').forEach(function (e) {
      e.classList.add("is-hl");
    });
    // Bring each stage's linked lines into its own pane's view, without scrolling the page: from the first
    // tensor-core instruction among them if there is one (tl.dot's line sets up its operands long before), else
    // from the first.
    explorer.querySelectorAll(".mlc-x-pane:not(.mlc-x-source) pre").forEach(function (pre) {
      var lit = Array.from(pre.querySelectorAll(".is-hl"));
      var shown = lit.find(function (e) { return TENSOR_CORE.test(e.textContent); }) || lit[0];
      if (shown) pre.scrollTop = shown.offsetTop - pre.clientHeight / 3;  // pre is positioned: the offset is in it
    });
  }

  function hues(explorer) {
    var found = {};
    explorer.querySelectorAll(".mlc-x-source .mlc-x-line[data-src]").forEach(function (e) {
      found[e.dataset.src] = e.style.getPropertyValue("--mlc-x-hue");
    });
    return found;
  }

  function load(explorer, target) {
    var colour = hues(explorer);
    explorer.querySelectorAll(".mlc-x-targets button").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.target === target));
    });
    explorer.querySelectorAll(".mlc-x-cost").forEach(function (t) { t.hidden = t.dataset.target !== target; });
    explorer.dataset.loaded = "";
    // A second click (or the first load still under way) makes the earlier load stale: only the latest may
    // write its lines, or an earlier load finishing last would leave one stage showing the wrong target.
    var generation = explorer.mlcGeneration = (explorer.mlcGeneration || 0) + 1;
    var panes = Array.from(explorer.querySelectorAll(".mlc-x-pane[data-file]"));
    return Promise.all(panes.map(function (pane) {
      var url = explorer.dataset.files + explorer.dataset.kernel + "." + target + "." + pane.dataset.file + ".txt";
      var code = pane.querySelector("code");
      return fetch(url).then(function (r) {
        if (!r.ok) throw new Error(r.status + " " + url);
        return r.text();
      }).then(function (text) {
        if (generation !== explorer.mlcGeneration) return;
        var lines = document.createDocumentFragment();
        text.replace(/\n$/, "").split("\n").forEach(function (row) {
          var tab = row.indexOf("\t");
          var span = lineElement(row.slice(0, tab), row.slice(tab + 1));
          if (span.dataset.src && colour[span.dataset.src]) span.style.setProperty("--mlc-x-hue", colour[span.dataset.src]);
          lines.appendChild(span);
        });
        code.replaceChildren(lines);
      }).catch(function (error) {
        if (generation !== explorer.mlcGeneration) return;
        code.textContent = "could not load " + url + ": " + error.message;
      });
    })).then(function () {
      if (generation !== explorer.mlcGeneration) return;
      if (explorer.mlcSource) highlight(explorer, explorer.mlcSource);
      explorer.dataset.loaded = target;
    });
  }

  function step(pre, by) {  // Up and Down move the linked line inside a focused pane
    var lines = pre.querySelectorAll(".mlc-x-line");
    if (!lines.length) return;
    var at = Number(pre.dataset.at || -1) + by;
    at = Math.max(0, Math.min(lines.length - 1, at));
    pre.dataset.at = at;
    pre.querySelectorAll(".is-current").forEach(function (e) { e.classList.remove("is-current"); });
    lines[at].classList.add("is-current");
    lines[at].scrollIntoView({block: "nearest"});
    return lines[at];
  }

  document.querySelectorAll(".mlc-explorer").forEach(function (explorer) {
    var pressed = explorer.querySelector('.mlc-x-targets button[aria-pressed="true"]');
    explorer.querySelector(".mlc-x-source").querySelectorAll(".mlc-x-line[data-src]").forEach(function (e) {
      e.tabIndex = 0;
      e.addEventListener("focus", function () { highlight(explorer, e.dataset.src); });
    });
    explorer.addEventListener("mouseover", function (event) {
      var line = event.target.closest(".mlc-x-line");
      if (line) highlight(explorer, line.dataset.src);
    });
    explorer.addEventListener("keydown", function (event) {
      var pre = event.target.closest(".mlc-x-pane:not(.mlc-x-source) pre");
      if (!pre || (event.key !== "ArrowDown" && event.key !== "ArrowUp")) return;
      event.preventDefault();
      var line = step(pre, event.key === "ArrowDown" ? 1 : -1);
      if (line) highlight(explorer, line.dataset.src);
    });
    explorer.querySelectorAll(".mlc-x-targets button").forEach(function (b) {
      b.addEventListener("click", function () { load(explorer, b.dataset.target); });
    });
    load(explorer, pressed ? pressed.dataset.target : explorer.querySelector(".mlc-x-targets button").dataset.target);
  });
})();
