"use strict";
(function () {
  // Every value of a job is set as text or as a property, never as markup.
  var PAGE = 100;
  var LABELS = {
    done: "done",
    answered: "waiting for a download",
    failed: "failed",
    refused: "refused",
    unknown: "unknown",
    claimed: "claimed"
  };
  var NOTES = {
    answered: "The answer is kept: a rerun downloads its files without paying again.",
    lost: "Its link expired: only paying again gets it.",
    refused: "Not done and not paid: a rerun sends it again.",
    unknown: "Sent, outcome unknown: it may have been paid.",
    claimed: "In flight, or its run stopped before an answer."
  };
  var ORDER = ["done", "answered", "failed", "refused", "unknown", "claimed"];
  var jobs = JSON.parse(document.getElementById("jobs").textContent);
  // In the jobs file's order, whatever order the ledger gave them in.
  jobs.sort(function (a, b) { return (a.l || 0) - (b.l || 0) || (a.j < b.j ? -1 : a.j > b.j ? 1 : 0); });
  var $ = function (id) { return document.getElementById(id); };
  var shown = jobs, at = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function label(s, lost) {
    if (s === "answered" && lost) return "link expired";
    return LABELS[s] || s;
  }
  function count(key) {
    var n = Object.create(null);
    jobs.forEach(function (j) { n[j[key]] = (n[j[key]] || 0) + 1; });
    return n;
  }
  function options(sel, counts, order, name) {
    var keys = Object.keys(counts).sort(function (a, b) {
      var i = order.indexOf(a), k = order.indexOf(b);
      if (i < 0) i = order.length;
      if (k < 0) k = order.length;
      return i - k || (a < b ? -1 : a > b ? 1 : 0);
    });
    keys.forEach(function (k) {
      var o = el("option", "", name(k) + " (" + counts[k] + ")");
      o.value = k;
      sel.appendChild(o);
    });
  }

  function media(j) {
    var box = el("div", "media");
    var files = j.m || [], images = 0;
    files.forEach(function (f) {
      if (f.k === "image") {
        images++;
        var a = el("a", "thumb");
        a.href = f.h;
        a.target = "_blank";
        a.rel = "noopener";
        var img = el("img");
        img.loading = "lazy";
        img.decoding = "async";
        img.alt = f.n;
        img.title = f.n;
        img.src = f.h;
        a.appendChild(img);
        box.appendChild(a);
      } else if (f.k === "audio") {
        var au = el("audio");
        au.controls = true;
        au.preload = "none";
        au.src = f.h;
        au.title = f.n;
        box.appendChild(au);
      } else if (f.k === "video") {
        var v = el("video");
        v.controls = true;
        v.preload = "metadata";
        v.src = f.h + "#t=0.1";
        v.title = f.n;
        box.appendChild(v);
      }
    });
    if (images > 1) box.className += " multi";
    return box;
  }

  function links(j) {
    var box = el("div", "links");
    (j.m || []).forEach(function (f) {
      if (f.k === "image") return;
      var a = el("a", "", f.n);
      a.href = f.h;
      a.target = "_blank";
      a.rel = "noopener";
      box.appendChild(a);
    });
    if (j.mm) box.appendChild(el("div", "", "and " + j.mm + " more files"));
    (j.u || []).forEach(function (u) {
      var a = el("a", "", u);
      a.href = u;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      box.appendChild(a);
    });
    if (j.lf) box.appendChild(el("div", "fake", "These links were served by a fake service on this machine (a test's, or one a command line ran): they died when its run ended."));
    return box;
  }

  function render(j) {
    var c = el("article", "card " + j.s);
    c.dataset.job = j.j || "";
    c.dataset.state = j.s;
    var top = el("div", "top");
    top.appendChild(el("span", "op", j.o));
    top.appendChild(el("span", "badge", label(j.s, j.x)));
    c.appendChild(top);
    var note = NOTES[j.s === "answered" && j.x ? "lost" : j.s];
    if (note) c.appendChild(el("div", "note", note));
    c.appendChild(media(j));
    if (j.t) c.appendChild(el("div", "text", j.t));
    if (j.e) c.appendChild(el("div", "error", j.e));
    c.appendChild(links(j));
    if (j.f) {
      var dl = el("dl");
      j.f.forEach(function (kv) {
        dl.appendChild(el("dt", "", kv[0]));
        var dd = el("dd", "", kv[1]);
        if (kv[2]) dd.title = kv[2];
        dl.appendChild(dd);
      });
      c.appendChild(dl);
    }
    var meta = [];
    if (j.i) meta.push("id " + j.i);
    if (j.l) meta.push("line " + j.l);
    if (j.r) meta.push("request " + j.r);
    if (j.w) meta.push(j.w);
    if (j.j) meta.push("job " + j.j);
    c.appendChild(el("div", "meta", meta.join(" · ")));
    return c;
  }

  function matches(j, state, op, q) {
    if (state && j.s !== state) return false;
    if (op && j.o !== op) return false;
    if (!q) return true;
    var hay = [j.i, j.j, j.t, j.e, j.r];
    (j.f || []).forEach(function (kv) { hay.push(kv[1], kv[2]); });
    return hay.some(function (s) { return s && s.toLowerCase().indexOf(q) >= 0; });
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    at = Math.min(Math.max(at, 0), pages - 1);
    var main = $("cards");
    main.textContent = "";
    var frag = document.createDocumentFragment();
    shown.slice(at * PAGE, (at + 1) * PAGE).forEach(function (j) { frag.appendChild(render(j)); });
    if (!shown.length) frag.appendChild(el("p", "empty", "No job matches these filters."));
    main.appendChild(frag);
    var where = "page " + (at + 1) + " of " + pages + " (" + shown.length + " jobs)";
    $("at").textContent = where;
    $("at2").textContent = where;
    $("prev").disabled = $("prev2").disabled = at === 0;
    $("next").disabled = $("next2").disabled = at >= pages - 1;
    main.dataset.rendered = String(main.querySelectorAll("article").length);
    main.dataset.page = String(at + 1);
    main.dataset.pages = String(pages);
  }

  function filter() {
    var state = $("state").value, op = $("op").value, q = $("q").value.trim().toLowerCase();
    shown = jobs.filter(function (j) { return matches(j, state, op, q); });
    at = 0;
    draw();
  }

  function go(d) { at += d; draw(); window.scrollTo(0, 0); }

  var states = count("s");
  options($("state"), states, ORDER, function (k) { return label(k, false); });
  options($("op"), count("o"), [], function (k) { return k; });
  $("summary").textContent = jobs.length + " jobs: " + ORDER.concat(Object.keys(states).filter(function (s) {
    return ORDER.indexOf(s) < 0;
  })).filter(function (s) { return states[s]; }).map(function (s) {
    return states[s] + " " + label(s, false);
  }).join(", ");
  $("state").addEventListener("change", filter);
  $("op").addEventListener("change", filter);
  $("q").addEventListener("input", filter);
  ["prev", "prev2"].forEach(function (id) { $(id).addEventListener("click", function () { go(-1); }); });
  ["next", "next2"].forEach(function (id) { $(id).addEventListener("click", function () { go(1); }); });
  draw();
})();
