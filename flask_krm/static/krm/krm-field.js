/* flask-krm field state: one state object per field, and the guard that keeps live renders off
 * what the person typed.
 *
 * A field shows the draft after every render, except while it holds an edit the draft does not show
 * yet; then it keeps what was typed, caret and selection included. Its states:
 *
 *   state     the field shows                     event  -> next state
 *   clean     the draft (follows every render;    type   -> typing
 *             focused, its caret stays in place)
 *   typing    what was typed; its debounced       type   -> typing    send  -> sending   queue -> queued
 *             request is not made yet             forget -> clean
 *   queued    what was typed; waits in the page   type   -> typing    send  -> sending   queue -> queued
 *             for the connection                  forget -> clean
 *   sending   what was typed; its request is out  type   -> typing    send  -> sending   queue -> queued
 *                                                 lose   -> queued    refuse -> refused  accept -> settling
 *                                                 settle -> clean     forget -> clean
 *   refused   what was typed; the server refused  type   -> typing    send  -> sending   queue -> queued
 *             it (its error slot says why)        lose   -> queued    refuse -> refused  accept -> settling
 *                                                 settle -> clean     forget -> clean
 *   settling  what was typed; accepted, the draft type   -> typing    send  -> sending   queue -> queued
 *             shows it from the render carrying   settle -> clean     forget -> clean
 *             the edit count of the answer
 *
 * The events: type (the person changed the value), send (its request leaves), queue (it waits for
 * the connection), lose (its request got no answer), refuse / accept (the answer), settle (a render
 * shows the edit: the answer carried no count, or a render carrying the count came), forget (Undo,
 * Take theirs or Remove replaced it). An event a state has no entry for leaves it as it is (an
 * answer to an older request while the person types again).
 *
 * The state is readable as data-krm-state (absent while clean) and krm.field.state(el); data-krm-
 * unsent (any state but clean), -pending (typing), -queued and -refused are written from it.
 */
(() => {
    "use strict";

    const krm = window.krm;
    const {ATTR} = krm;

    const TRANSITIONS = Object.freeze({
        clean: {type: "typing"},
        typing: {type: "typing", send: "sending", queue: "queued", forget: "clean"},
        queued: {type: "typing", send: "sending", queue: "queued", forget: "clean"},
        sending: {
            type: "typing", send: "sending", queue: "queued", lose: "queued", refuse: "refused", accept: "settling",
            settle: "clean", forget: "clean"
        },
        refused: {
            type: "typing", send: "sending", queue: "queued", lose: "queued", refuse: "refused", accept: "settling",
            settle: "clean", forget: "clean"
        },
        settling: {type: "typing", send: "sending", queue: "queued", settle: "clean", forget: "clean"}
    });

    // The presence attributes written from the state.
    const FLAGS = Object.freeze({
        [ATTR.unsent]: state => state !== "clean",
        [ATTR.pending]: state => state === "typing",
        [ATTR.queued]: state => state === "queued",
        [ATTR.refused]: state => state === "refused"
    });

    /** A field's state, and what it needs besides: the text its typing started from ("from", sent
     * with each text edit), the edit count it settles at, and the newest render it kept out. */
    class FieldState {
        constructor(el) {
            this.el = el;
            this.state = "clean";
            this.from = null;
            this.settleAt = null;
            this.skipped = null;   // {edits, rendered} of the newest render left out
        }

        fire(event, detail = {}) {
            const next = TRANSITIONS[this.state][event];
            if (next === undefined) return false;
            this.state = next;
            if (next === "clean") {
                this.from = null;
                this.skipped = null;
            }
            this.settleAt = next === "settling" ? detail.edits : null;
            this.paint();
            return true;
        }

        paint() {
            const el = this.el;
            if (this.state === "clean") el.removeAttribute(ATTR.state);
            else if (el.getAttribute(ATTR.state) !== this.state) el.setAttribute(ATTR.state, this.state);
            for (const [name, on] of Object.entries(FLAGS)) {
                if (el.hasAttribute(name) !== on(this.state)) el.toggleAttribute(name, on(this.state));
            }
        }
    }

    const states = new WeakMap();

    function of(el) {
        let field = states.get(el);
        if (!field) states.set(el, field = new FieldState(el));
        return field;
    }

    const stateOf = el => states.has(el) ? states.get(el).state : "clean";

    // -- a render: the field follows it unless it holds an edit the render does not show --------

    // The edit count a render was made with (0 when it carries none): the count on the root of
    // the block the node came in (a block sent alone), else the marker of the body it came in.
    function renderEdits(newNode) {
        let root = newNode;
        const stop = "[" + ATTR.edits + "], hx-partial, .krm-body";
        while (root.parentNode && !(root instanceof Element && root.matches(stop))) {
            root = root.parentNode;
        }
        const marker = root instanceof Element && root.hasAttribute(ATTR.edits) ? root
            : typeof root.querySelector === "function" ? root.querySelector("[" + ATTR.edits + "]") : null;
        return marker ? Number(marker.getAttribute(ATTR.edits)) || 0 : 0;
    }

    // Whether a render must leave the field as it is (its edit is not in the render).
    function keepsTyped(el, newNode) {
        if (stateOf(el) === "clean") {
            rememberCaret(el);
            return false;
        }
        const field = of(el);
        const edits = renderEdits(newNode);
        if (field.state === "settling" && edits >= field.settleAt) {
            field.fire("settle");
            return false;
        }
        field.skipped = {edits, rendered: krm.widget(el).rendered(newNode)};
        return true;
    }

    // The text and selection of the focused field without an edit, taken before a render changes
    // its value, so that the caret stays where the person put it (see placed).
    let caret = null;

    function rememberCaret(el) {
        if (document.activeElement !== el || !krm.widget(el).text || el.selectionStart === null) return;
        caret = {el, value: el.value, start: el.selectionStart, end: el.selectionEnd};
    }

    // Where an offset into ``before`` stands in ``after``: before the changed part it stays, after it
    // it keeps its distance from the end, inside it it goes to the end of the new part.
    function placed(offset, before, after) {
        let prefix = 0;
        while (prefix < before.length && prefix < after.length && before[prefix] === after[prefix]) prefix++;
        if (offset <= prefix) return offset;
        let suffix = 0;
        while (suffix < before.length - prefix && suffix < after.length - prefix
               && before[before.length - 1 - suffix] === after[after.length - 1 - suffix]) suffix++;
        const fromEnd = before.length - offset;
        return after.length - Math.min(fromEnd, suffix);
    }

    /** A field without an edit shows what the last render says (a morph sets attributes only); when
     * the person has it focused, its caret and selection stay in place around the change. */
    function follow(el) {
        if (stateOf(el) !== "clean") return;
        const kept = caret !== null && caret.el === el ? caret : null;
        krm.widget(el).show(el);
        if (kept === null) return;
        caret = null;
        if (document.activeElement !== el || el.value === kept.value) return;
        el.setSelectionRange(placed(kept.start, kept.value, el.value), placed(kept.end, kept.value, el.value));
    }

    function followAll() {
        for (const el of document.querySelectorAll(krm.sel.component + " [hx-post]")) {
            if (krm.isField(el)) follow(el);
        }
    }

    const registered = htmx.registerExtension("krm", {
        htmx_before_morph_node: (elt, detail) => !(krm.isField(detail.oldNode) && keepsTyped(detail.oldNode, detail.newNode))
    });
    if (registered === false) {  // the host limits htmx.config.extensions: fields with an edit skip morphs
        const skip = "[" + ATTR.unsent + "]";
        const current = htmx.config.morphSkip;
        if (!current) htmx.config.morphSkip = skip;
        else if (!current.split(",").map(s => s.trim()).includes(skip)) htmx.config.morphSkip = current + "," + skip;
    }

    /** An accepted edit: the field settles at the answer's edit count, at once when a render
     * carrying it was already kept out (the answer came after it) or when no render will tell. */
    function accepted(el, edits) {
        const field = of(el);
        // without the extension no render settles it; the YAML text is settled by its answer (its fresh text)
        if (edits === null || registered === false || el.matches(".krm-yaml-text")) {
            field.fire("settle");
            return;
        }
        const skipped = field.skipped;
        if (!field.fire("accept", {edits})) return;
        if (!skipped || skipped.edits < edits) return;
        krm.widget(el).adopt(el, skipped.rendered);
        field.fire("settle");
        follow(el);
    }

    // -- typing ------------------------------------------------------------------------------

    const triggeredBy = (el, name) => (el.getAttribute("hx-trigger") || "").split(/[\s,]+/).includes(name);

    // Typing marks a field at once (a key being renamed is protected before its change event);
    // a change event marks only the fields it triggers (checkboxes, keys), not a text field's blur.
    function typed(event) {
        const el = event.target;
        if (!krm.isField(el)) return;
        if (event.type === "change" && !triggeredBy(el, "change")) return;
        const field = of(el);
        // A change that came without a beforeinput (a script, autofill) started from what the last
        // render showed.
        if (krm.widget(el).text && field.from === null) field.from = el.defaultValue;
        field.fire("type");
    }

    // The text a typing session starts from: what the field showed before its first change.
    document.addEventListener("beforeinput", event => {
        const el = event.target;
        if (krm.isField(el) && krm.widget(el).text && of(el).from === null) of(el).from = el.value;
    }, true);
    document.addEventListener("input", typed, true);
    document.addEventListener("change", typed, true);

    krm.field = Object.freeze({
        TRANSITIONS,
        /** The field's state object (made clean on first use). */
        of,
        /** The field's state name: clean, typing, queued, sending, refused or settling. */
        state: stateOf,
        /** Fires an event at the field's state; false when the state has no entry for it. */
        fire: (el, event, detail) => of(el).fire(event, detail),
        accepted,
        follow,
        followAll,
        /** The fields under ``root`` in the given states. */
        inState: (root, ...names) => [...root.querySelectorAll("[" + ATTR.state + "]")]
            .filter(el => krm.isField(el) && names.includes(stateOf(el)))
    });
})();
