// Hand-written SVG line charts with error bars for the live campaign page
// (no library, no network). window.msjChart(plot, xLabel) returns an
// element: one curve per series, a marker per point (hollow when the point
// is unstable), vertical bars for the 95% confidence intervals.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  // The report's styles (results/report: styleOf, distinctStyles;
  // docs/report.md, "Styles"): Okabe–Ito's colour-blind-safe palette
  // without yellow (7 colours), 8 markers (filled and open circle, square,
  // diamond, pentagon) and 4 dash patterns; style s has colour s mod 7,
  // marker s mod 8 and dash floor(s/7) mod 4. Series i asks for style i,
  // as in a report's figure without policy families or overlays. That
  // sequence alone gives the 29th to 31st series the 5th to 7th's marker
  // and dash (style 28: marker 4, dash 0, as style 4), told apart by
  // colour only, which a greyscale print or a reader who confuses the two
  // colours cannot do: "no two of the first 56 series look alike", as
  // this said, held in colour only. So, as distinctStyles does, a series
  // whose marker and dash an earlier one has takes the next style of its
  // colour whose marker and dash are free, else the first free style: the
  // first MAX_DISTINCT = 32 series (8 markers × 4 dashes) each have a
  // marker and dash no other has, the report's figure's styles. Past 32,
  // markers and dashes repeat, and a series takes the first style from its
  // own on that no earlier series has (colour, marker and dash repeat
  // together every 56 styles): up to 56 series no two look alike in
  // colour; past 56 whole styles repeat.
  var COLORS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"];
  var MARKERS = [["circle", true], ["square", false], ["diamond", true], ["circle", false],
    ["square", true], ["diamond", false], ["pentagon", true], ["pentagon", false]];
  var DASHES = ["", "5 2", "1.5 1.5", "5 1.5 1.5 1.5"];
  var MAX_DISTINCT = MARKERS.length * DASHES.length; // 32
  var PERIOD = 56; // lcm(7, 8, 7 × 4): style s + 56 is style s
  // greyKey is what style s looks like without colour: its marker and
  // dash, one of MAX_DISTINCT values.
  function greyKey(s) {
    return s % MARKERS.length + MARKERS.length * (Math.floor(s / COLORS.length) % DASHES.length);
  }
  var assigned = [], greyTaken = {}, styleTaken = {};
  // styleOf is series i's style, assigned in series order (a series'
  // style depends on the series before it only, so the legend and every
  // plot agree whatever their number of series).
  function styleOf(i) {
    while (assigned.length <= i) {
      var w = assigned.length, got = -1;
      for (var j = 0; j < MAX_DISTINCT * COLORS.length && got < 0; j++) {
        // j < 32: w's colour (its 8 markers and dashes recur every 8
        // steps of 7); then any style, in order.
        var s = j < MAX_DISTINCT ? w + j * COLORS.length : j - MAX_DISTINCT;
        if (!greyTaken[greyKey(s)]) got = s;
      }
      if (got < 0) { // past 32: a whole style no earlier series has, if any
        for (got = w; styleTaken[got % PERIOD] && got < w + PERIOD; got++) { /* next */ }
      }
      greyTaken[greyKey(got)] = styleTaken[got % PERIOD] = true;
      assigned.push(got);
    }
    return assigned[i];
  }
  // msjStyle is series i's colour, marker ([shape, filled]) and dash
  // pattern (an SVG stroke-dasharray, "" for a solid line).
  window.msjStyle = function (i) {
    var s = styleOf(i);
    return { color: COLORS[s % COLORS.length], marker: MARKERS[s % MARKERS.length],
      dash: DASHES[Math.floor(s / COLORS.length) % DASHES.length] };
  };
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function ticks(lo, hi, n) {
    if (!(hi > lo)) { hi = lo + 1; }
    var span = hi - lo, step = Math.pow(10, Math.floor(Math.log10(span / n)));
    var err = (n * step) / span;
    if (err <= 0.15) step *= 10; else if (err <= 0.35) step *= 5; else if (err <= 0.75) step *= 2;
    var out = [], t = Math.ceil(lo / step) * step;
    for (; t <= hi + step * 1e-9; t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    return out;
  }
  function fmt(v) {
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(1);
    return String(Math.round(v * 1e4) / 1e4);
  }
  window.msjColor = function (i) { return window.msjStyle(i).color; };
  window.msjDash = function (i) { return window.msjStyle(i).dash; };
  // marker draws series i's marker at (x, y): filled, or white inside
  // (also every marker of a lower bound).
  function marker(i, x, y, c, hollow, parent) {
    var m = window.msjStyle(i).marker, r = 3.2, fill = m[1] && !hollow ? c : "#fff";
    var attrs = { stroke: c, "stroke-width": 1.4, fill: fill, "class": "pt" };
    if (m[0] === "circle") {
      attrs.cx = x; attrs.cy = y; attrs.r = r;
      return el("circle", attrs, parent);
    }
    var n = m[0] === "square" ? 4 : m[0] === "diamond" ? 4 : 5, rot = m[0] === "square" ? Math.PI / 4 : 0, R = r * 1.25;
    var pts = [];
    for (var k = 0; k < n; k++) {
      var a = Math.PI / 2 + rot + 2 * Math.PI * k / n;
      pts.push((x + R * Math.cos(a)).toFixed(2) + "," + (y - R * Math.sin(a)).toFixed(2));
    }
    attrs.points = pts.join(" ");
    return el("polygon", attrs, parent);
  }
  window.msjMarker = function (i, c) {
    var svg = el("svg", { width: 22, height: 10, viewBox: "0 0 22 10", "class": "swatch" });
    el("line", { x1: 0, x2: 22, y1: 5, y2: 5, stroke: c, "stroke-width": 1.6, "stroke-dasharray": window.msjDash(i) }, svg);
    marker(i, 11, 5, c, false, svg);
    return svg;
  };
  // msjChart draws one plot; yScale is "auto" (log when the means span
  // more than two decades, as the report decides), "log" or "linear".
  window.msjChart = function (plot, xLabel, yScale) {
    var W = 460, H = 300, L = 62, R = 12, T = 24, B = 40;
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": plot.label, "data-metric": plot.metric });
    var xs = [], ys = [], means = [];
    plot.series.forEach(function (s) { s.points.forEach(function (p) { means.push(p.y); }); });
    var mlo = Math.min.apply(null, means), mhi = Math.max.apply(null, means);
    var logY = yScale === "log" ? mlo > 0 : yScale === "linear" ? false : mlo > 0 && mhi / mlo > 100;
    // The interval as the report draws it: on a log axis the delta-method
    // interval of the log of the mean, y·exp(±hw/y), which stays positive.
    function ci(p) {
      if (p.hw == null) return [p.y, p.y];
      return logY && p.y > 0 ? [p.y * Math.exp(-p.hw / p.y), p.y * Math.exp(p.hw / p.y)] : [p.y - p.hw, p.y + p.hw];
    }
    plot.series.forEach(function (s) {
      s.points.forEach(function (p) {
        xs.push(p.x);
        var b = ci(p);
        ys.push(b[0], b[1]);
      });
    });
    el("text", { x: L, y: 15, "class": "title" }, svg).textContent = plot.label;
    if (xs.length === 0) {
      el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#7a8190" }, svg).textContent = "no finished point yet";
      return svg;
    }
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    if (x0 === x1) { x0 -= 0.5; x1 += 0.5; }
    var padx = (x1 - x0) * 0.04; x0 -= padx; x1 += padx;
    var y0, y1;
    if (logY) {
      var pos = ys.filter(function (v) { return v > 0; });
      y0 = Math.log10(Math.min.apply(null, pos.concat([mlo]))); y1 = Math.log10(Math.max.apply(null, pos));
      y0 -= 0.1; y1 += 0.1;
    } else {
      y0 = Math.min.apply(null, ys); y1 = Math.max.apply(null, ys);
      if (y0 > 0 && y0 < (y1 - y0) * 0.5) y0 = 0;
      if (y0 === y1) { y0 -= 1; y1 += 1; }
      var pady = (y1 - y0) * 0.05; y1 += pady; if (y0 !== 0) y0 -= pady;
    }
    function X(v) { return L + (v - x0) / (x1 - x0) * (W - L - R); }
    function Y(v) {
      if (logY) v = v > 0 ? Math.log10(v) : y0;
      return H - B - (v - y0) / (y1 - y0) * (H - T - B);
    }
    var g = el("g", { "class": "grid" }, svg), ax = el("g", { "class": "axis" }, svg);
    var yt = logY
      ? ticks(Math.ceil(y0), Math.floor(y1), 6).filter(function (e) { return e === Math.round(e); }).map(function (e) { return Math.pow(10, e); })
      : ticks(y0, y1, 5);
    if (logY) svg.setAttribute("data-log", "1");
    yt.forEach(function (t) {
      el("line", { x1: L, x2: W - R, y1: Y(t), y2: Y(t) }, g);
      el("text", { x: L - 5, y: Y(t) + 4, "text-anchor": "end" }, ax).textContent = fmt(t);
    });
    ticks(x0, x1, 6).forEach(function (t) {
      el("line", { x1: X(t), x2: X(t), y1: H - B, y2: H - B + 4 }, ax);
      el("text", { x: X(t), y: H - B + 16, "text-anchor": "middle" }, ax).textContent = fmt(t);
    });
    el("line", { x1: L, x2: W - R, y1: H - B, y2: H - B }, ax);
    el("line", { x1: L, x2: L, y1: T, y2: H - B }, ax);
    el("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, ax).textContent = xLabel;
    plot.series.forEach(function (s, i) {
      var c = window.msjColor(i);
      if (s.points.length > 1) {
        el("polyline", { fill: "none", stroke: c, "stroke-width": 1.6, "stroke-dasharray": window.msjDash(i),
          points: s.points.map(function (p) { return X(p.x) + "," + Y(p.y); }).join(" ") }, svg);
      }
      s.points.forEach(function (p) {
        if (p.hw != null && p.hw > 0) {
          var iv = ci(p), a = Y(iv[0]), b = Y(iv[1]);
          el("line", { x1: X(p.x), x2: X(p.x), y1: a, y2: b, stroke: c, "stroke-width": 1.2, "class": "ci" }, svg);
          el("line", { x1: X(p.x) - 3, x2: X(p.x) + 3, y1: a, y2: a, stroke: c }, svg);
          el("line", { x1: X(p.x) - 3, x2: X(p.x) + 3, y1: b, y2: b, stroke: c }, svg);
        }
        var m = marker(i, X(p.x), Y(p.y), c, p.unstable, svg);
        // A bound (unstable or truncated point: aggregate.IsBound) is
        // "≥ y" without an interval, as in the terminal and the report.
        el("title", {}, m).textContent = s.name + ": " + fmt(p.x) + " → " +
          (p.unstable ? "≥ " + fmt(p.y) + " (lower bound: unstable or truncated)" :
            fmt(p.y) + (p.hw != null ? " ± " + fmt(p.hw) : "")) + " (n=" + p.n + ")";
      });
    });
    return svg;
  };
})();
