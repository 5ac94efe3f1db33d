// queuegen dashboard: draws each queue's throughput chart with uPlot and
// refreshes it every 15 s; the counts table refreshes itself (htmx); the
// job list and a job's page refresh their live part (data-live) in place,
// keeping the operator's place: scroll, checked boxes, open details.
(function () {
  "use strict";
  var colors = ["#2557c7", "#18794e", "#b42318", "#9a6700"];

  // lastIndex is the index of the latest minute at which every series
  // that has values has one (the pushed line may lag the finished line by
  // a reading), else of the latest with any value, or null.
  function lastIndex(data) {
    var live = [], any = null;
    for (var s = 1; s < data.length; s++) {
      if (data[s].some(function (v) { return v != null; })) { live.push(s); }
    }
    for (var i = data[0].length - 1; i >= 0; i--) {
      var have = live.filter(function (s) { return data[s][i] != null; }).length;
      if (have > 0 && any == null) { any = i; }
      if (have > 0 && have === live.length) { return i; }
    }
    return any;
  }

  // showLatest points the legend at the latest minute while the cursor
  // is off the chart, rather than leaving it reading "--".
  function showLatest(u) {
    if (u.cursor.left >= 0 && u.legend.idx != null) { return; }
    var i = lastIndex(u.data);
    if (i != null && u.legend.idx !== i) { u.setLegend({ idx: i }); }
  }

  function draw(box) {
    fetch(box.dataset.src, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (d) {
        var note = box.parentElement.querySelector(".chart-note");
        if (note) { note.textContent = d.note || ""; }
        var data = [d.at].concat(d.series.map(function (s) { return s.values; }));
        var series = [{ label: "minute" }].concat(d.series.map(function (s, i) {
          return { label: s.label, stroke: colors[i % colors.length], width: 1.5, spanGaps: false };
        }));
        if (box._plot && box._plot.series.length === series.length) {
          box._plot.setData(data);
          showLatest(box._plot);
          return;
        }
        if (box._plot) { box._plot.destroy(); }
        box._plot = new uPlot({
          width: Math.max(box.clientWidth, 300), height: 200, series: series,
          axes: [{}, { label: "jobs / minute", size: 60 }],
          scales: { x: { time: true } },
          hooks: { setCursor: [showLatest], ready: [showLatest] }
        }, data, box);
        box.dataset.drawn = "1";
      })
      .catch(function (e) {
        var note = box.parentElement.querySelector(".chart-note");
        if (note) { note.textContent = "chart unavailable: " + e; }
      });
  }

  function drawAll() {
    document.querySelectorAll(".chart[data-src]").forEach(draw);
  }

  // refresh fetches this page again and swaps in its live part, keeping
  // the boxes checked, the details open, the focus and the scroll.
  function refresh(live) {
    if (document.hidden || live._busy) { return; }
    live._busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { "X-Queuegen-Live": "1" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById(live.id);
        if (!fresh) { return; }
        var checked = {};
        live.querySelectorAll("input[type=checkbox]").forEach(function (b) {
          checked[b.name + "=" + b.value] = b.checked;
        });
        var open = {};
        live.querySelectorAll("details[id]").forEach(function (d) { open[d.id] = d.open; });
        var focused = document.activeElement && live.contains(document.activeElement) ? document.activeElement.id : "";
        var x = window.scrollX, y = window.scrollY;
        live.replaceChildren.apply(live, Array.prototype.slice.call(fresh.childNodes).map(function (n) {
          return document.importNode(n, true);
        }));
        live.querySelectorAll("input[type=checkbox]").forEach(function (b) {
          var k = b.name + "=" + b.value;
          if (k in checked) { b.checked = checked[k]; }
        });
        live.querySelectorAll("details[id]").forEach(function (d) {
          if (d.id in open) { d.open = open[d.id]; }
        });
        if (focused && document.getElementById(focused)) { document.getElementById(focused).focus({ preventScroll: true }); }
        window.scrollTo(x, y);
        live.dataset.refreshed = String((Number(live.dataset.refreshed) || 0) + 1);
      })
      .catch(function () { /* the next refresh tries again */ })
      .then(function () { live._busy = false; });
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    setInterval(drawAll, 15000);
    document.querySelectorAll("[data-live][id]").forEach(function (live) {
      setInterval(function () { refresh(live); }, Number(live.dataset.live) || 5000);
    });
  });
})();
