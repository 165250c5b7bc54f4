// A name in a table's code (dissecting/autograd_graphs.py, persistent_reduction) may break after a "/", "_" or
// "." rather than anywhere: each gets a <wbr> after it, so a narrow column wraps "dissecting/ autograd_ graphs.py"
// and a name splits mid-word only where a part alone is wider than the column. Done in the page, not in the
// built HTML, so the search index and a copy keep the names whole.
(function () {
  var cells = document.querySelectorAll(".md-typeset td code, .md-typeset th code");
  for (var i = 0; i < cells.length; i++) {
    var walker = document.createTreeWalker(cells[i], NodeFilter.SHOW_TEXT);
    var texts = [];
    while (walker.nextNode()) texts.push(walker.currentNode);
    for (var j = 0; j < texts.length; j++) {
      var parts = texts[j].data.split(/(?<=[\/_.])(?=[A-Za-z0-9])/);
      if (parts.length < 2) continue;
      var pieces = document.createDocumentFragment();
      for (var k = 0; k < parts.length; k++) {
        if (k) pieces.appendChild(document.createElement("wbr"));
        pieces.appendChild(document.createTextNode(parts[k]));
      }
      texts[j].parentNode.replaceChild(pieces, texts[j]);
    }
  }
})();
