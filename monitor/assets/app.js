// The live campaign page: polls /api/campaigns/<id> every second and
// redraws progress, workers, failures and plots.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var params = new URLSearchParams(location.search);
  var current = params.get("c") || "";

  function dur(s) {
    if (s < 0 || !isFinite(s)) return "unknown";
    s = Math.round(s);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return (h ? h + "h " : "") + (h || m ? m + "m " : "") + r + "s";
  }
  function text(td, v) { td.textContent = v; return td; }
  function kv(o) {
    if (!o) return "";
    return Object.keys(o).sort().map(function (k) { return k + "=" + JSON.stringify(o[k]); }).join(" ");
  }
  function row(tbody, cells) {
    var tr = document.createElement("tr");
    cells.forEach(function (c) {
      var td = document.createElement("td");
      if (c && typeof c === "object") { td.className = c.cls || ""; td.textContent = c.v; } else td.textContent = c;
      tr.appendChild(td);
    });
    tbody.appendChild(tr);
  }

  function pickCampaign() {
    return fetch("/api/campaigns", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (d) {
      var list = d.campaigns || [], sel = $("pick");
      sel.innerHTML = "";
      list.forEach(function (c) {
        var o = document.createElement("option");
        o.value = c.campaign;
        o.textContent = (c.name || c.campaign) + " — " + c.state + " (" + c.campaign.slice(0, 12) + ")";
        sel.appendChild(o);
      });
      if (!current && list.length) {
        var running = list.filter(function (c) { return c.state === "running"; });
        // The list is oldest first (sortStatus): open on the newest.
        var pool = running.length ? running : list;
        current = pool[pool.length - 1].campaign;
      }
      sel.value = current;
    });
  }
  $("pick").addEventListener("change", function () {
    current = this.value;
    history.replaceState(null, "", "?c=" + encodeURIComponent(current));
    poll();
  });

  var last = null; // the last campaign JSON, redrawn when the y axis changes
  function render(d) {
    last = d;
    document.body.dataset.state = d.state;
    document.body.dataset.finished = String(d.done + d.failed);
    $("title").textContent = (d.name || "campaign") + " · " + d.campaign.slice(0, 16);
    var opt = $("pick").querySelector('option[value="' + d.campaign + '"]');
    if (opt) opt.textContent = (d.name || d.campaign) + " — " + d.state + " (" + d.campaign.slice(0, 12) + ")";
    var tot = Math.max(d.total, 1);
    $("bar-done").style.width = (100 * d.done / tot) + "%";
    $("bar-failed").style.width = (100 * d.failed / tot) + "%";
    $("bar-running").style.width = (100 * d.running / tot) + "%";
    var pct = Math.floor(1000 * (d.done + d.failed) / tot) / 10;
    $("progress-text").textContent = (d.done + d.failed) + " / " + d.total + " tasks finished (" + pct + "%) — " + d.state;
    var elapsed = ((d.finished ? Date.parse(d.finished) : Date.parse(d.now)) - Date.parse(d.created)) / 1000;
    // Rate and ETA of this run, as the terminal computes them (tasks
    // finished since the run began over the time since).
    var run = d.run_started ? (Date.parse(d.now) - Date.parse(d.run_started)) / 1000 : -1;
    $("eta").textContent = d.state === "running"
      ? (run >= 0 ? "elapsed " + dur(run) + " · " + sig(d.rate) + " tasks/s · ETA " + (d.eta >= 0 ? dur(d.eta) : "?")
        : "no task finished in this run yet · ETA ?")
      : "took " + dur(elapsed);
    $("n-queued").textContent = d.queued;
    $("n-running").textContent = d.running;
    $("n-done").textContent = d.done;
    $("n-failed").textContent = d.failed;
    $("n-redelivered").textContent = d.redelivered;
    $("n-points").textContent = d.points_done + " / " + d.points;
    var rep = $("report");
    rep.innerHTML = "";
    if (d.report) {
      var a = document.createElement("a");
      a.href = d.report; a.id = "report-link"; a.textContent = "Final report →";
      rep.appendChild(a);
    }
    var wb = $("workers").tBodies[0];
    wb.innerHTML = "";
    (d.workers || []).forEach(function (w) {
      var age = w.last_heartbeat ? (Date.parse(d.now) - Date.parse(w.last_heartbeat)) / 1000 : -1;
      row(wb, [w.worker, w.host || "?", { v: w.slots || "?", cls: "num" }, { v: w.running, cls: "num" },
        { v: w.per_minute.toFixed(1), cls: "num" }, { v: w.done, cls: "num" }, { v: w.failed, cls: "num" },
        { v: age < 0 ? "none" : (w.stopping ? "stopped, " : "") + dur(age) + " ago", cls: age > 10 ? "stale" : "" }]);
    });
    var fb = $("failures").tBodies[0];
    fb.innerHTML = "";
    $("fail-count").textContent = d.failures_total ? "(" + d.failures_total + ")" : "(none)";
    (d.failures || []).forEach(function (f) {
      row(fb, [f.task.slice(0, 12), f.policy, kv(f.params), kv(f.axes), { v: f.error, cls: "err" }]);
    });
    verification(d.verify);
    // Why the campaign does not move (status's words; worker names and
    // errors come from workers and servers: set as text, never markup).
    var pb = $("problems");
    pb.innerHTML = "";
    $("problems-box").hidden = !(d.problems && d.problems.length);
    (d.problems || []).forEach(function (s) { var li = document.createElement("li"); li.textContent = s; pb.appendChild(li); });
    document.body.dataset.problems = String((d.problems || []).length);
    $("xaxis").textContent = d.x ? "against " + d.x : "";
    var box = $("plots");
    box.innerHTML = "";
    var npts = 0;
    // One legend for every plot: the series are the same, in the same
    // order, in each.
    var leg = $("legend");
    leg.innerHTML = "";
    if (d.plots && d.plots.length) {
      d.plots[0].series.forEach(function (s, i) {
        var sp = document.createElement("span");
        sp.appendChild(window.msjMarker(i, window.msjColor(i)));
        sp.appendChild(document.createTextNode(" " + s.name));
        leg.appendChild(sp);
      });
    }
    (d.plots || []).forEach(function (p) {
      var div = document.createElement("div");
      div.className = "plot";
      div.appendChild(window.msjChart(p, d.x, yScale()));
      p.series.forEach(function (s) { if (p.metric === "mean_response") npts += s.points.length; });
      box.appendChild(div);
    });
    document.body.dataset.plotted = String(npts);
  }

  // verification shows the campaign's spot verification in the words of
  // `msjfarm status`. Worker names and findings come from workers: set as
  // text, never as markup.
  function verification(v) {
    var box = $("verify-box"), notes = $("verify-notes");
    box.hidden = !v;
    document.body.dataset.verified = v ? v.verified + "/" + v.sampled : "";
    notes.innerHTML = "";
    if (!v) return;
    $("verify-fraction").textContent = "(" + Number((100 * v.fraction).toPrecision(6)) + "% of the tasks, run again on another worker)";
    $("verify-text").textContent = v.verified + " of " + v.sampled + " sampled tasks verified, " +
      v.mismatched + " mismatched, " + v.unverified + " unverified (no second worker), " + v.pending + " pending" +
      (v.skipped ? ", " + v.skipped + " skipped (failed)" : "") +
      (v.carried ? "; " + v.carried + " of the sampled kept from an earlier, larger sample" : "");
    function note(s) { var li = document.createElement("li"); li.textContent = s; notes.appendChild(li); }
    if (v.disagreeing && v.disagreeing.length) note("disagreeing workers: " + v.disagreeing.join(", "));
    if (v.nondeterministic && v.nondeterministic.length) note("not deterministic (three runs, three results; msjfarm plugin check tells): " + v.nondeterministic.join(", "));
    (v.findings || []).forEach(function (f) { note("mismatch: " + f); });
  }

  // sig prints a rate with 3 significant digits, as the terminal does.
  function sig(v) { return v > 0 ? String(Number(v.toPrecision(3))) : "0"; }
  // yScale is the y-axis choice (auto, log, linear), kept across reloads.
  function yScale() { return $("yscale").value; }
  (function () {
    var s = $("yscale"), saved = window.localStorage && localStorage.getItem("msjfarm-yscale");
    if (saved) s.value = saved;
    s.addEventListener("change", function () {
      if (window.localStorage) localStorage.setItem("msjfarm-yscale", s.value);
      if (last) render(last);
    });
  })();

  var timer = null;
  function poll() {
    clearTimeout(timer);
    var next = function (ms) { timer = setTimeout(poll, ms); };
    if (!current) {
      pickCampaign().then(function () { next(current ? 0 : 1000); }, function () { next(2000); });
      return;
    }
    fetch("/api/campaigns/" + encodeURIComponent(current), { cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error(r.status + " " + r.statusText); return r.json(); })
      .then(function (d) {
        $("conn").textContent = "updated " + new Date().toLocaleTimeString();
        render(d);
        next(d.state === "running" ? 1000 : 5000);
      }, function (e) {
        $("conn").textContent = "cannot reach the coordinator (" + e.message + "), retrying";
        next(2000);
      });
  }
  pickCampaign().then(poll, poll);
})();
