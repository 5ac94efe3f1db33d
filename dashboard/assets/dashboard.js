// queuegen dashboard: draws each queue's throughput chart with uPlot and
// refreshes it every 15 s. The counts table refreshes itself (htmx).
(function () {
  "use strict";
  var colors = ["#2557c7", "#18794e", "#b42318", "#9a6700"];

  function draw(box) {
    fetch(box.dataset.src, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (d) {
        var note = box.parentElement.querySelector(".chart-note");
        if (note) { note.textContent = d.note || ""; }
        var data = [d.at].concat(d.series.map(function (s) { return s.values; }));
        var series = [{}].concat(d.series.map(function (s, i) {
          return { label: s.label, stroke: colors[i % colors.length], width: 1.5, spanGaps: false };
        }));
        if (box._plot && box._plot.series.length === series.length) {
          box._plot.setData(data);
          return;
        }
        if (box._plot) { box._plot.destroy(); }
        box._plot = new uPlot({
          width: Math.max(box.clientWidth, 300), height: 200, series: series,
          axes: [{}, { label: "jobs / minute", size: 60 }],
          scales: { x: { time: true } }
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

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    setInterval(drawAll, 15000);
  });
})();
