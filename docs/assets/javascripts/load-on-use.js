// MathJax (2.1 MB) loads only on the pages that use math. This script is not deferred and stands at the end
// of the body, so the page is parsed when it runs. Diagrams need no script: they are SVG images made when
// the site is built (scripts/diagrams.py).
(function () {
  var vendor = document.currentScript.src.replace(/javascripts\/[^\/]*$/, "vendor/");
  function load(file) {
    document.write('<script src="' + vendor + file + '"><\/script>');
  }
  if (document.querySelector(".arithmatex")) load("mathjax-tex-svg.js");
})();
