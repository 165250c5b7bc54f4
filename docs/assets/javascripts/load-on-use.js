// The two large libraries load only on the pages that use them: Mermaid (3.6 MB) where a diagram is,
// MathJax (2.1 MB) where math is. This script is not deferred and stands at the end of the body, so the
// page is parsed when it runs, and a script it writes runs before Material draws the diagrams.
(function () {
  var vendor = document.currentScript.src.replace(/javascripts\/[^\/]*$/, "vendor/");
  function load(file) {
    document.write('<script src="' + vendor + file + '"><\/script>');
  }
  if (document.querySelector("pre.mermaid, div.mermaid")) load("mermaid.min.js");
  if (document.querySelector(".arithmatex")) load("mathjax-tex-svg.js");
})();
