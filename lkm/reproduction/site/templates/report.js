/* The report's progressive enhancement: the page is complete without this script.
   It adds the claims table's filters (by paper and by verdict) and sorts any table
   (class "sortable") by the header clicked, numbers as numbers. */
(function () {
  "use strict";

  var NUMBER = /^[+\-\u2212]?(\d+(\.\d*)?|\.\d+)([eE][+\-]?\d+)?/;

  function key(cell) {
    var text = (cell ? cell.textContent : "").trim();
    var m = NUMBER.exec(text);
    return m ? { n: parseFloat(m[0].replace("\u2212", "-")), s: text } : { n: null, s: text };
  }

  function compare(a, b) {
    if (a.n !== null && b.n !== null) { return a.n - b.n; }
    if (a.n !== null) { return -1; }
    if (b.n !== null) { return 1; }
    var blankA = a.s === "" || a.s === "\u2013", blankB = b.s === "" || b.s === "\u2013";
    if (blankA !== blankB) { return blankA ? 1 : -1; }
    return a.s.localeCompare(b.s, undefined, { numeric: true, sensitivity: "base" });
  }

  function sortBy(table, th, column) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.querySelectorAll("thead th"), function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    Array.prototype.forEach.call(table.tBodies, function (body) {
      var rows = Array.prototype.filter.call(body.rows, function (row) {
        return !row.classList.contains("group");
      });
      var keyed = rows.map(function (row, i) { return { row: row, key: key(row.cells[column]), i: i }; });
      keyed.sort(function (a, b) {
        var c = compare(a.key, b.key);
        return (ascending ? c : -c) || a.i - b.i;
      });
      keyed.forEach(function (k) { body.appendChild(k.row); });
    });
  }

  function sortable(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) { return; }
    Array.prototype.forEach.call(head.cells, function (th, column) {
      if (!th.textContent.trim()) { return; }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.title = "sort by this column";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, th, column); });
    });
  }

  function select(label, name, options) {
    var wrap = document.createElement("label");
    wrap.appendChild(document.createTextNode(label));
    var sel = document.createElement("select");
    sel.name = name;
    options.forEach(function (o) {
      var opt = document.createElement("option");
      opt.value = o[0];
      opt.textContent = o[1];
      sel.appendChild(opt);
    });
    wrap.appendChild(sel);
    return { label: wrap, select: sel };
  }

  function claimsFilters(table) {
    var bodies = Array.prototype.slice.call(table.tBodies);
    var rows = Array.prototype.slice.call(table.querySelectorAll("tr.claim-row"));
    var papers = bodies.map(function (b) {
      var link = b.querySelector("tr.group a");
      return [b.getAttribute("data-paper"), link ? link.textContent + " (" + b.getAttribute("data-paper") + ")" : b.getAttribute("data-paper")];
    });
    var seen = {};
    var verdicts = [];
    Array.prototype.forEach.call(document.querySelectorAll(".counts [data-verdict]"), function (chip) {
      var v = chip.getAttribute("data-verdict");
      if (!seen[v]) { seen[v] = true; verdicts.push([v, v]); }
    });
    var paper = select("paper", "paper", [["", "all papers"]].concat(papers));
    var verdict = select("verdict", "verdict", [["", "every verdict"]].concat(verdicts));
    var shown = document.createElement("output");
    var box = document.createElement("div");
    box.className = "filters";
    box.setAttribute("role", "search");
    box.setAttribute("aria-label", "filter the claims");
    box.appendChild(paper.label);
    box.appendChild(verdict.label);
    box.appendChild(shown);
    var wrap = table.parentNode;
    wrap.parentNode.insertBefore(box, wrap);

    function apply() {
      var p = paper.select.value, v = verdict.select.value, count = 0;
      rows.forEach(function (row) {
        var visible = (!p || row.getAttribute("data-paper") === p) && (!v || row.getAttribute("data-verdict") === v);
        row.hidden = !visible;
        if (visible) { count += 1; }
      });
      bodies.forEach(function (body) {
        var any = body.querySelector("tr.claim-row:not([hidden])");
        var empty = body.querySelector("tr.empty");
        body.hidden = p ? body.getAttribute("data-paper") !== p : (!any && !(empty && !v));
      });
      shown.textContent = count + " of " + rows.length + " claims shown";
      chips.forEach(function (chip) {
        chip.setAttribute("aria-pressed", String(chip.getAttribute("data-verdict") === v));
      });
    }

    var chips = [];
    Array.prototype.forEach.call(document.querySelectorAll(".counts span[data-verdict]"), function (span) {
      var chip = document.createElement("button");
      chip.type = "button";
      chip.className = span.className;
      chip.setAttribute("data-verdict", span.getAttribute("data-verdict"));
      chip.title = "show only these claims (again: every verdict)";
      chip.textContent = span.textContent;
      span.parentNode.replaceChild(chip, span);
      chip.addEventListener("click", function () {
        verdict.select.value = verdict.select.value === chip.getAttribute("data-verdict") ? "" : chip.getAttribute("data-verdict");
        apply();
      });
      chips.push(chip);
    });
    paper.select.addEventListener("change", apply);
    verdict.select.addEventListener("change", apply);
    apply();
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);
    var claims = document.getElementById("claims");
    if (claims) { claimsFilters(claims); }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
