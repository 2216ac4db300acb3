// The Map tab (assistant/ui/map_tab.py): draws #pa-map's points (JSON in data-map) on a canvas,
// rings the latest answer's cited papers (#pa-map-marks-data), shows title and authors on hover,
// and on click asks the server for the paper's card (hidden #pa-map-pick + #pa-map-pick-btn).
// The card's buttons send their message on the Chat tab. The map zooms (wheel, the + and −
// buttons, around the pointer) and pans (drag); double-click or "Reset" shows it whole again.
// Loaded into the page head.
(function () {
  var S = {key: null, data: null, marks: [], marksKey: null, selected: null, pts: [], hover: -1,
           zoom: {k: 1, x: 0, y: 0}, drag: null, dragged: false};
  var PAD = 18, SCALE = 10000, MAX_ZOOM = 40, WHEEL = 0.0015, STEP = 1.6;
  window.paMap = S;  // for the browser tests: S.pts (screen positions), S.zoom, S.drawn, S.drawMs

  function root() { return document.getElementById('pa-map'); }

  function refresh() {
    var el = root();
    var marksEl = document.getElementById('pa-map-marks-data');
    // parsed once per store revision (the server sends new points only for a new one): the
    // chat's streaming mutates the page many times a second, and reading the large data-map
    // attribute each time would copy it for nothing
    var key = el ? 'rev:' + (el.getAttribute('data-revision') || '') : null;
    var marksKey = marksEl ? marksEl.getAttribute('data-marks') : null;
    var changed = false;
    if (key !== S.key) {
      S.key = key; changed = true;
      S.data = null; S.selected = null; S.zoom = {k: 1, x: 0, y: 0};
      if (el && el.getAttribute('data-map')) {
        try { S.data = JSON.parse(el.getAttribute('data-map')); } catch (e) { S.data = null; }
      }
    }
    if (marksKey !== S.marksKey) {
      S.marksKey = marksKey; changed = true;
      try { S.marks = marksKey ? JSON.parse(marksKey) : []; } catch (e) { S.marks = []; }
    }
    if (changed || needsResize()) draw();
  }

  function canvas() { var el = root(); return el ? el.querySelector('canvas.map-canvas') : null; }

  function needsResize() {
    var c = canvas();
    return c && S.data && c.parentElement.clientWidth > 0 && c.parentElement.clientWidth !== S.width;
  }

  // map coordinates (0..SCALE) → canvas pixels: the whole map fitted, then the zoom's scale k
  // and shift (x, y)
  function toScreen(x, y, w, h) {
    var z = S.zoom;
    return [(PAD + (x / SCALE) * (w - 2 * PAD)) * z.k + z.x,
            (PAD + (1 - y / SCALE) * (h - 2 * PAD)) * z.k + z.y];
  }

  // zoom by `factor` keeping the canvas point (px, py) where it is; shifts kept so that part of
  // the map stays in view
  function zoomAt(factor, px, py) {
    var z = S.zoom, k = Math.min(MAX_ZOOM, Math.max(1, z.k * factor)), f = k / z.k;
    if (k === 1) { S.zoom = {k: 1, x: 0, y: 0}; draw(); return; }
    S.zoom = clampShift({k: k, x: px - (px - z.x) * f, y: py - (py - z.y) * f});
    draw();
  }

  function clampShift(z) {
    var w = S.width || 0, h = S.height || 0;
    z.x = Math.min(w / 2, Math.max(w / 2 - w * z.k, z.x));
    z.y = Math.min(h / 2, Math.max(h / 2 - h * z.k, z.y));
    return z;
  }

  function resetZoom() { S.zoom = {k: 1, x: 0, y: 0}; draw(); }

  function draw() {
    var c = canvas(), d = S.data;
    if (!c || !d) return;
    var t0 = performance.now();
    var w = c.parentElement.clientWidth;
    if (!w) return;  // the tab is hidden: drawn when it is shown (ResizeObserver)
    var h = Math.round(Math.min(680, Math.max(380, w * 0.72)));
    var dpr = window.devicePixelRatio || 1;
    c.width = w * dpr; c.height = h * dpr; c.style.width = w + 'px'; c.style.height = h + 'px';
    S.width = w; S.height = h;
    var g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    var n = d.x.length, r = (n > 3000 ? 1.8 : n > 500 ? 2.6 : 4.5) * (1 + 0.3 * Math.log2(S.zoom.k));
    var colors = {};
    d.clusters.forEach(function (k) { colors[k.id] = k.color; });
    S.pts = new Array(n);
    g.globalAlpha = n > 3000 ? 0.6 : 0.8;
    for (var i = 0; i < n; i++) {
      var p = toScreen(d.x[i], d.y[i], w, h);
      S.pts[i] = p;
      if (p[0] < -r || p[1] < -r || p[0] > w + r || p[1] > h + r) continue;  // zoomed out of view
      g.fillStyle = colors[d.c[i]] || '#888';
      g.beginPath(); g.arc(p[0], p[1], r, 0, 6.2832); g.fill();
    }
    g.globalAlpha = 1;
    // theme labels at their centres
    g.font = '600 12px ui-sans-serif, system-ui, sans-serif';
    g.textAlign = 'center'; g.textBaseline = 'middle';
    var placed = [];  // label boxes drawn so far: a label that would overlap one moves down
    d.clusters.forEach(function (k) {
      if (!k.size) return;
      var p = toScreen(k.x * SCALE, k.y * SCALE, w, h), tw = g.measureText(k.label).width + 8;
      var y = p[1];
      for (var tries = 0; tries < 12; tries++) {
        var hit = placed.some(function (b) {
          return Math.abs(b[0] - p[0]) < (b[2] + tw) / 2 && Math.abs(b[1] - y) < 15; });
        if (!hit) break;
        y += 15;
      }
      placed.push([p[0], y, tw]);
      g.lineWidth = 4; g.strokeStyle = 'rgba(255,255,255,0.9)'; g.strokeText(k.label, p[0], y);
      g.fillStyle = '#1f2937'; g.fillText(k.label, p[0], y);
    });
    // the latest answer's cited papers: ringed and numbered
    S.markPts = [];
    S.marks.forEach(function (m) {
      var p = toScreen(m.x, m.y, w, h);
      S.markPts.push(p);
      g.lineWidth = 2.5; g.strokeStyle = '#111827'; g.fillStyle = colors[m.c] || '#888';
      g.beginPath(); g.arc(p[0], p[1], 7, 0, 6.2832); g.fill(); g.stroke();
      g.font = '700 11px ui-sans-serif, system-ui, sans-serif';
      g.lineWidth = 3; g.strokeStyle = 'white'; g.strokeText('[' + m.n + ']', p[0] + 16, p[1] - 10);
      g.fillStyle = '#111827'; g.fillText('[' + m.n + ']', p[0] + 16, p[1] - 10);
    });
    if (S.selected !== null && S.pts[S.selected]) {
      var q = S.pts[S.selected];
      g.lineWidth = 2; g.strokeStyle = '#4f46e5';
      g.beginPath(); g.arc(q[0], q[1], 9, 0, 6.2832); g.stroke();
    }
    S.drawn = n; S.drawMs = performance.now() - t0;
    c.setAttribute('data-drawn', String(n));
    c.setAttribute('data-zoom', S.zoom.k.toFixed(2));
    c.setAttribute('data-marks', String(S.marks.length));
  }

  function nearest(ev) {
    var c = canvas();
    if (!c || !S.pts.length) return -1;
    var b = c.getBoundingClientRect(), x = ev.clientX - b.left, y = ev.clientY - b.top;
    var best = -1, bestD = 100;  // within 10 px
    for (var i = 0; i < S.pts.length; i++) {
      var dx = S.pts[i][0] - x, dy = S.pts[i][1] - y, dd = dx * dx + dy * dy;
      if (dd < bestD) { bestD = dd; best = i; }
    }
    // a ringed (cited) paper wins when the pointer is on its ring
    (S.markPts || []).forEach(function (p, j) {
      var dx = p[0] - x, dy = p[1] - y;
      if (dx * dx + dy * dy < 64) best = -2 - j;
    });
    return best;
  }

  function paperAt(i) {
    var d = S.data;
    if (i <= -2) { var m = S.marks[-2 - i]; return {id: m.id, t: m.t, a: m.a, n: m.n}; }
    return {id: d.id[i], t: d.t[i], a: d.a[i]};
  }

  var pending = false;
  document.addEventListener('mousemove', function (ev) {
    if (S.drag) return;  // panning: pointermove moves the map
    if (pending || !S.data || !ev.target.closest || !ev.target.closest('#pa-map canvas')) {
      var tip0 = document.querySelector('#pa-map .map-tip');
      if (tip0 && !tip0.hidden && !(ev.target.closest && ev.target.closest('#pa-map canvas'))) tip0.hidden = true;
      return;
    }
    pending = true;
    requestAnimationFrame(function () {
      pending = false;
      var i = nearest(ev), tip = document.querySelector('#pa-map .map-tip');
      if (!tip) return;
      S.hover = i;
      if (i === -1) { tip.hidden = true; canvas().style.cursor = 'grab'; return; }
      var p = paperAt(i), b = canvas().getBoundingClientRect();
      tip.innerHTML = '';
      var t = document.createElement('div'); t.className = 'tip-title';
      t.textContent = (p.n ? '[' + p.n + '] ' : '') + p.t;
      var a = document.createElement('div'); a.className = 'tip-authors'; a.textContent = p.a || 'unknown authors';
      tip.appendChild(t); tip.appendChild(a);
      tip.hidden = false;
      var x = ev.clientX - b.left, y = ev.clientY - b.top;
      tip.style.left = Math.min(x + 14, b.width - 320) + 'px';
      tip.style.top = (y + 14 + tip.offsetHeight > b.height ? y - 10 - tip.offsetHeight : y + 14) + 'px';
      canvas().style.cursor = 'pointer';
    });
  });

  function sendTo(id, value) {
    var box = document.querySelector('#' + id + ' textarea, #' + id + ' input');
    if (!box) return null;
    var proto = box.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value').set.call(box, value);
    box.dispatchEvent(new Event('input', {bubbles: true}));
    return box;
  }

  document.addEventListener('click', function (ev) {
    var c = ev.target && ev.target.closest ? ev.target.closest('#pa-map canvas') : null;
    if (c && S.dragged) { S.dragged = false; return; }  // the end of a drag, not a click
    var zb = ev.target && ev.target.closest ? ev.target.closest('#pa-map button[data-zoom]') : null;
    if (zb) {
      var how = zb.getAttribute('data-zoom');
      if (how === 'reset') resetZoom();
      else zoomAt(how === 'in' ? STEP : 1 / STEP, (S.width || 0) / 2, (S.height || 0) / 2);
      return;
    }
    if (c) {
      var i = nearest(ev);
      if (i === -1) return;
      S.selected = i >= 0 ? i : null;
      draw();
      var p = paperAt(i);
      if (!sendTo('pa-map-pick', p.id)) return;
      setTimeout(function () {
        var b = document.querySelector('#pa-map-pick-btn');
        if (b) b.click();
      }, 30);
      return;
    }
    // a card's "Ask about this" / "More like this": the message goes to the chat, on its tab
    var btn = ev.target && ev.target.closest ? ev.target.closest('button.map-send[data-send]') : null;
    if (!btn) return;
    ev.preventDefault(); ev.stopPropagation();
    var tabs = document.querySelectorAll('button[role="tab"]');
    for (var k = 0; k < tabs.length; k++) {
      if (tabs[k].textContent.trim() === 'Chat') { tabs[k].click(); break; }
    }
    var message = btn.getAttribute('data-send');
    setTimeout(function () {
      if (!sendTo('pa-input', message)) return;
      setTimeout(function () { var s = document.getElementById('pa-send'); if (s) s.click(); }, 50);
    }, 150);
  }, true);

  // zoom: the wheel over the map, around the pointer
  document.addEventListener('wheel', function (ev) {
    var c = ev.target && ev.target.closest ? ev.target.closest('#pa-map canvas') : null;
    if (!c || !S.data) return;
    ev.preventDefault();
    var b = c.getBoundingClientRect();
    zoomAt(Math.exp(-ev.deltaY * WHEEL), ev.clientX - b.left, ev.clientY - b.top);
  }, {passive: false});

  // pan: drag the map (a move of a few pixels is still a click)
  document.addEventListener('pointerdown', function (ev) {
    var c = ev.target && ev.target.closest ? ev.target.closest('#pa-map canvas') : null;
    if (!c || !S.data || ev.button !== 0) return;
    S.drag = {x: ev.clientX, y: ev.clientY, zx: S.zoom.x, zy: S.zoom.y, moved: false};
    S.dragged = false;
  });
  document.addEventListener('pointermove', function (ev) {
    var d = S.drag;
    if (!d) return;
    var dx = ev.clientX - d.x, dy = ev.clientY - d.y;
    if (!d.moved && dx * dx + dy * dy < 16) return;
    if (!d.moved) {
      d.moved = true;
      var tip = document.querySelector('#pa-map .map-tip');
      if (tip) tip.hidden = true;
    }
    S.zoom = clampShift({k: S.zoom.k, x: d.zx + dx, y: d.zy + dy});
    if (canvas()) canvas().style.cursor = 'grabbing';
    draw();
  });
  document.addEventListener('pointerup', function () {
    if (S.drag && S.drag.moved) S.dragged = true;  // the click that follows is not a pick
    S.drag = null;
  });
  document.addEventListener('dblclick', function (ev) {
    if (ev.target && ev.target.closest && ev.target.closest('#pa-map canvas')) resetZoom();
  });

  var scheduled = false;
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(function () { scheduled = false; refresh(); });
  }
  function start() {
    new MutationObserver(schedule).observe(document.body, {subtree: true, childList: true,
      attributes: true, attributeFilter: ['data-map', 'data-marks', 'data-revision']});
    if (window.ResizeObserver) new ResizeObserver(schedule).observe(document.body);
    window.addEventListener('resize', schedule);
    // a hidden tab has no width: draw when it becomes visible
    document.addEventListener('click', function () { setTimeout(schedule, 60); });
    schedule();
  }
  if (document.body) start(); else document.addEventListener('DOMContentLoaded', start);
})();
