// The two large libraries load only on the pages that use them: Mermaid (3.6 MB) where a diagram is,
// MathJax (2.1 MB) where math is. This script is not deferred and stands at the end of the body, so the
// page is parsed when it runs, and a script it writes runs before Material draws the diagrams.
(function () {
  var vendor = document.currentScript.src.replace(/javascripts\/[^\/]*$/, "vendor/");
  function naturalSize() {
    var initialize = mermaid.initialize.bind(mermaid);
    mermaid.initialize = function (config) {
      config = Object.assign({}, config);
      config.flowchart = Object.assign({}, config.flowchart, {useMaxWidth: false});
      return initialize(config);
    };
  }
  function load(file) {
    document.write('<script src="' + vendor + file + '"><\/script>');
  }
  if (document.querySelector("pre.mermaid, div.mermaid")) {
    load("mermaid.min.js");
    // Diagrams keep their natural size (16 px text) and scroll sideways in their frame when wider than
    // the column, instead of shrinking to fit it: Material's own initialize() gets useMaxWidth: false.
    document.write("<script>(" + naturalSize + ")()<\/script>");
  }
  if (document.querySelector(".arithmatex")) load("mathjax-tex-svg.js");
})();
