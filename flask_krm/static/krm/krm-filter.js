/* flask-krm: a list's filter applies as you type.
 *
 * The filter (form.krm-filter) is a GET form that works without script: it reloads the page with
 * the list's text in the URL (configmaps.q=...), which the server renders and keeps live. With
 * this script, a pause in typing (DELAY ms) submits it the same way, and the new page gives the
 * field back its focus, its caret and anything typed while the page was being replaced (kept in
 * sessionStorage under KEY; typed text that the page did not filter by yet is applied again).
 * The Filter button is hidden then; Enter still filters at once.
 */
(() => {
    "use strict";

    const DELAY = 400;                   // ms of no typing before the filter applies
    const KEY = "krm-filter-typing";     // sessionStorage: {path, name, value, start, end} of the field being typed in
    const FIELD = "form.krm-filter input[type=search]";

    let timer = null;
    let leaving = null;                  // the field typed in when the page was replaced

    document.documentElement.classList.add("krm-live-filters");

    function target(form) {
        const url = new URL(form.getAttribute("action") || location.pathname, location.href);
        url.search = new URLSearchParams(new FormData(form)).toString();
        return url;
    }

    function remember(field) {
        sessionStorage.setItem(KEY, JSON.stringify({
            path: location.pathname, name: field.name, value: field.value,
            start: field.selectionStart, end: field.selectionEnd,
        }));
    }

    function apply(field) {
        timer = null;
        if (!field.isConnected || !field.form) return;
        const url = target(field.form);
        if (url.href === location.href) return;
        leaving = field;
        remember(field);
        location.replace(url.href);
    }

    document.addEventListener("input", event => {
        const field = event.target;
        if (!(field instanceof HTMLInputElement) || !field.matches(FIELD)) return;
        clearTimeout(timer);
        timer = setTimeout(() => apply(field), DELAY);
    }, true);

    // What was typed after the page began to be replaced goes to the next page too.
    window.addEventListener("pagehide", () => { if (leaving) remember(leaving); });

    function restore() {
        const raw = sessionStorage.getItem(KEY);
        if (!raw) return;
        sessionStorage.removeItem(KEY);
        let saved;
        try { saved = JSON.parse(raw); } catch (e) { return; }
        if (!saved || saved.path !== location.pathname) return;
        const field = [...document.querySelectorAll(FIELD)].find(f => f.name === saved.name);
        if (!field) return;
        field.focus();
        if (field.value !== saved.value) {  // typed while the page was replaced: filter by it too
            field.value = saved.value;
            timer = setTimeout(() => apply(field), DELAY);
        }
        const end = field.value.length;
        field.setSelectionRange(Math.min(saved.start ?? end, end), Math.min(saved.end ?? end, end));
    }

    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", restore);
    else restore();
})();
