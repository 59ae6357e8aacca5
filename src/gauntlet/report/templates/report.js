// The report's only script. Sorts a table with class "sortable" when a header cell is clicked:
// by each cell's data-sort value when it has one (numbers compare as numbers), else by its text.
(function () {
  "use strict";
  function key(cell) {
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    var number = parseFloat(raw);
    return raw !== "" && !isNaN(number) && isFinite(raw) ? number : raw.trim().toLowerCase();
  }
  function compare(a, b) {
    if (typeof a === typeof b) { return a < b ? -1 : a > b ? 1 : 0; }
    return typeof a === "number" ? -1 : 1;
  }
  function sortBy(table, column, descending) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (x, y) {
      var order = compare(key(x.cells[column]), key(y.cells[column]));
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell, index) {
      cell.setAttribute("aria-sort", index === column ? (descending ? "descending" : "ascending") : "none");
    });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell, index) {
      cell.addEventListener("click", function () {
        sortBy(table, index, cell.getAttribute("aria-sort") === "ascending");
      });
    });
  });
})();

// Opens the attempt a link points to: a closed <details> hides its content otherwise.
(function () {
  "use strict";
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (target && target.tagName === "DETAILS") { target.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
