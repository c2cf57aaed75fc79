/* flask-krm editors' YAML tab: tabs, a text that follows the draft, and typing that live updates never touch.
 *
 * Loaded after the other page scripts (krm.js lists the order). Each editor rendered with a YAML tab has
 *  - #<id>-yaml-source in its live body: the draft as YAML, morphed in with every update;
 *  - #<id>-yaml-text: the text the person edits, outside the live body. It is a field (krm-field.js)
 *    (debounced POST of the text and of #<id>-yaml-before, the text it started from; queued while
 *    the connection is down; sent before Save);
 *  - #<id>-yaml-before: the text the person's edits are measured against;
 *  - #<id>-yaml-gutter: the text's line numbers (rewritten only when the number of lines changes,
 *    scrolled with the text), which the tab's problems and conflicts cite.
 * While the person is not typing (the field is clean, no request of it out), the text follows the
 * draft, keeping the caret's line and column. While they type, it is left alone: the tab says how
 * many lines the server changed meanwhile, and after the next pause (once the edit is applied) the
 * text takes the draft with both.
 */
(() => {
    "use strict";

    const krm = window.krm;
    const {ATTR} = krm;
    const heldSource = new WeakMap();  // text -> the source it must not go back to (older than an applied edit)

    const TAB = ".krm-tabs [" + ATTR.tab + "]";
    const part = (editor, name) => document.getElementById(editor.id + "-yaml-" + name);
    const editorOf = el => el instanceof Element ? el.closest(krm.sel.editor) : null;
    const isYamlText = el => el instanceof HTMLTextAreaElement && el.matches(".krm-yaml-text");
    const typing = text => krm.field.state(text) !== "clean" || krm.send.inFlight(text);

    function lineAndColumn(value, offset) {
        const before = value.slice(0, offset);
        const line = before.split("\n").length - 1;
        return [line, offset - (before.lastIndexOf("\n") + 1)];
    }

    function offsetOf(value, line, column) {
        const lines = value.split("\n");
        const at = Math.min(line, lines.length - 1);
        let offset = 0;
        for (let i = 0; i < at; i++) offset += lines[i].length + 1;
        return offset + Math.min(column, lines[at].length);
    }

    // The line of `lines` that holds `text`, nearest to `near` (lines added or removed above the
    // caret move it), or `near` itself when no line holds it.
    function sameLine(lines, text, near) {
        if (lines[near] === text) return near;
        for (let distance = 1; distance < lines.length; distance++) {
            if (lines[near - distance] === text) return near - distance;
            if (lines[near + distance] === text) return near + distance;
        }
        return near;
    }

    // Replaces the text, keeping the caret (and selection) on the same line, found by its content,
    // at the same column, and the scroll.
    function show(text, value) {
        if (text.value === value) return;
        const focused = document.activeElement === text;
        const oldLines = text.value.split("\n");
        const newLines = value.split("\n");
        const [startLine, startColumn] = lineAndColumn(text.value, text.selectionStart);
        const [endLine, endColumn] = lineAndColumn(text.value, text.selectionEnd);
        const start = sameLine(newLines, oldLines[startLine], startLine);
        const end = start + (endLine - startLine);
        const top = text.scrollTop;
        text.defaultValue = value;  // a clean field shows its default value after every render (krm-field.js)
        text.value = value;
        if (focused) text.setSelectionRange(offsetOf(value, start, startColumn), offsetOf(value, end, endColumn));
        text.scrollTop = top;
        numberLines(text);
    }

    // -- line numbers ----------------------------------------------------------------------------

    function numberLines(text) {
        const editor = editorOf(text);
        const gutter = editor && part(editor, "gutter");
        if (!gutter) return;
        let count = 1;
        for (let at = text.value.indexOf("\n"); at >= 0; at = text.value.indexOf("\n", at + 1)) count++;
        if (gutter.childElementCount !== count) {
            const shown = gutter.childElementCount;
            if (count > shown) {
                const more = document.createDocumentFragment();
                for (let n = shown + 1; n <= count; n++) {
                    const line = document.createElement("span");
                    line.textContent = n + "\n";
                    more.append(line);
                }
                gutter.append(more);
            } else {
                while (gutter.childElementCount > count) gutter.lastElementChild.remove();
            }
        }
        if (!gutter.style.paddingTop) {
            const style = getComputedStyle(text);
            gutter.style.paddingTop = (parseFloat(style.paddingTop) + parseFloat(style.borderTopWidth)) + "px";
        }
        gutter.scrollTop = text.scrollTop;
    }

    document.addEventListener("input", event => { if (isYamlText(event.target)) numberLines(event.target); }, true);
    document.addEventListener("scroll", event => {
        const text = event.target;
        if (!isYamlText(text)) return;
        const gutter = part(editorOf(text), "gutter");
        if (gutter) gutter.scrollTop = text.scrollTop;
    }, true);

    // The lines of `now` that `then` does not have (as a multiset), with the keys they set.
    function changedLines(then, now) {
        const counts = new Map();
        for (const line of then.split("\n")) counts.set(line, (counts.get(line) || 0) + 1);
        const changed = [];
        now.split("\n").forEach((line, index) => {
            const left = counts.get(line) || 0;
            if (left) counts.set(line, left - 1);
            else if (line.trim()) changed.push({line: index + 1, key: (line.match(/^\s*(?:-\s+)?([^:#]+):/) || [])[1]});
        });
        return changed;
    }

    function follow(editor) {
        const text = part(editor, "text");
        const source = part(editor, "source");
        const before = part(editor, "before");
        const note = part(editor, "note");
        if (!text || !source || !before) return;
        const draft = source.textContent;
        if (heldSource.has(text)) {
            if (heldSource.get(text) === draft) return;
            heldSource.delete(text);
        }
        if (!typing(text)) {
            show(text, draft);
            before.value = draft;
            if (note) note.textContent = "";
            return;
        }
        if (!note) return;
        const changed = changedLines(before.value, draft);
        if (!changed.length) {
            note.textContent = "";
            return;
        }
        const keys = [...new Set(changed.map(c => c.key && c.key.trim()).filter(Boolean))].slice(0, 4);
        const lines = changed.slice(0, 4).map(c => c.line).join(", ");
        note.textContent = (changed.length === 1 ? "1 line" : changed.length + " lines")
            + " changed by someone else while you type (line" + (changed.length === 1 ? " " : "s ") + lines
            + (changed.length > 4 ? "…" : "") + (keys.length ? ": " + keys.join(", ") : "")
            + "). They merge into your text when you pause.";
    }

    const followAll = () => {
        for (const editor of document.querySelectorAll(krm.sel.editor)) follow(editor);
    };

    // -- tabs ----------------------------------------------------------------------------------

    function select(editor, name, focus) {
        editor.setAttribute(ATTR.tab, name);
        for (const tab of editor.querySelectorAll(TAB)) {
            const chosen = tab.getAttribute(ATTR.tab) === name;
            tab.setAttribute("aria-selected", chosen ? "true" : "false");
            tab.tabIndex = chosen ? 0 : -1;
            if (chosen && focus) tab.focus();
        }
        if (name === "yaml") {
            follow(editor);
            const text = part(editor, "text");
            if (text) numberLines(text);  // its padding is measured once it is shown
        }
    }

    function goToLine(editor, line) {
        const text = part(editor, "text");
        if (!text) return;
        select(editor, "yaml", false);
        const start = offsetOf(text.value, line - 1, 0);
        const end = text.value.indexOf("\n", start);
        text.focus();
        text.setSelectionRange(start, end < 0 ? text.value.length : end);
        const lineHeight = parseFloat(getComputedStyle(text).lineHeight) || 18;
        text.scrollTop = Math.max(0, (line - 3) * lineHeight);
        numberLines(text);
    }

    document.addEventListener("click", event => {
        const target = event.target instanceof Element ? event.target : null;
        const editor = editorOf(target);
        if (!target || !editor) return;
        const tab = target.closest(TAB);
        if (tab) select(editor, tab.getAttribute(ATTR.tab), false);
        const goto = target.closest("[" + ATTR.yamlLine + "]");
        if (goto && goto.matches("button, li")) goToLine(editor, parseInt(goto.getAttribute(ATTR.yamlLine), 10));
    });

    document.addEventListener("keydown", event => {
        const tab = event.target instanceof Element ? event.target.closest(TAB) : null;
        if (!tab || !["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key)) return;
        const tabs = [...tab.parentElement.querySelectorAll("[" + ATTR.tab + "]")];
        const at = tabs.indexOf(tab);
        const next = {ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: tabs.length - 1}[event.key];
        const chosen = tabs[(next + tabs.length) % tabs.length];
        event.preventDefault();
        select(editorOf(tab), chosen.getAttribute(ATTR.tab), true);
    });

    // -- the text's requests ---------------------------------------------------------------------

    // An accepted edit: the field follows its default value again (krm-field.js), which must be the text.
    document.addEventListener("htmx:after:request", event => {
        const {sourceElement: text, response} = event.detail.ctx;
        if (isYamlText(text) && response && response.status < 300 && krm.field.state(text) === "clean") {
            text.defaultValue = text.value;
        }
    });

    document.addEventListener("htmx:finally:request", event => {
        const {sourceElement: text, request, response} = event.detail.ctx;
        if (!isYamlText(text)) return;
        const editor = editorOf(text);
        const fresh = editor && part(editor, "fresh");
        const applied = response && response.status === 200;
        if (editor && applied) {
            const sent = request && request.body && typeof request.body.get === "function" ? request.body.get("yaml") : null;
            if (sent !== null) part(editor, "before").value = sent;
            const newest = fresh && fresh.querySelector("[" + ATTR.yamlFresh + "]");
            if (newest && !typing(text)) {
                show(text, newest.textContent);
                part(editor, "before").value = newest.textContent;
                const source = part(editor, "source");
                if (source && source.textContent !== newest.textContent) heldSource.set(text, source.textContent);
            }
        }
        if (fresh) fresh.replaceChildren();
        if (editor) follow(editor);
    });

    function start() {
        for (const tabs of document.querySelectorAll(".krm-tabs")) {
            const editor = editorOf(tabs);
            if (editor && !editor.hasAttribute(ATTR.tab)) select(editor, "form", false);
        }
        followAll();
    }

    document.addEventListener("htmx:after:swap", followAll);
    document.addEventListener("htmx:sse:after:message", followAll);
    krm.onReady(start);
})();
