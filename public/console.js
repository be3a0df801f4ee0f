// couponkeeper console enhancements. Every page works without this file.
// "/" focuses the search box (unless typing in a field already).
document.addEventListener("keydown", function (e) {
  if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
  var t = e.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
  var box = document.getElementById("search-q");
  if (box) {
    e.preventDefault();
    box.focus();
    box.select();
  }
});
