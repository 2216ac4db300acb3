// Marker clicks: bring the source card into view (opening a folded earlier answer) and flash it.
// Runs in the capture phase so neither the browser's fragment navigation nor Gradio's link
// handling (which opens links in a new tab) gets the click. Loaded into the page head by assistant/ui.
(function () {
  function show(id) {
    var el = document.getElementById(id);
    if (!el) return false;
    var d = el.closest('details'); if (d) d.open = true;
    el.scrollIntoView({behavior: 'smooth', block: 'nearest'});
    el.classList.remove('src-flash'); void el.offsetWidth; el.classList.add('src-flash');
    setTimeout(function () { el.classList.remove('src-flash'); }, 1600);
    return true;
  }
  document.addEventListener('click', function (ev) {
    var a = ev.target && ev.target.closest ? ev.target.closest('a[href*="#src-"]') : null;
    if (!a) return;
    var href = a.getAttribute('href') || '';
    ev.preventDefault(); ev.stopPropagation();
    show(href.slice(href.indexOf('#') + 1));
  }, true);
})();

// "More like this" on a source card: send the card's request as the next chat message, exactly as
// if it had been typed (the textbox's own input event, then the Send button).
(function () {
  document.addEventListener('click', function (ev) {
    var b = ev.target && ev.target.closest ? ev.target.closest('button.src-more[data-more]') : null;
    if (!b) return;
    var box = document.querySelector('#pa-input textarea');
    var send = document.getElementById('pa-send');
    if (!box || !send) return;
    ev.preventDefault(); ev.stopPropagation();
    var setter = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value').set;
    setter.call(box, b.getAttribute('data-more'));
    box.dispatchEvent(new Event('input', {bubbles: true}));
    setTimeout(function () { send.click(); }, 50);
  }, true);
})();
