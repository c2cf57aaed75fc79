/* flask-krm sending: the requests of fields and write buttons, through htmx.
 *
 *  - every field stays editable whatever the connection: an edit made while the page is not live
 *    (or whose request got no answer) waits in the page's queue (state queued) and is sent, one
 *    field at a time in the order of the latest edits, once the page is live again;
 *  - a request from a button marked data-krm-flush (Save...) waits until the component's fields have
 *    sent their edits, and is refused while a field holds a value the server refused (naming it);
 *  - write buttons make no request while their component is not live;
 *  - Undo, Take theirs and Remove forget the edits of the fields under their path;
 *  - every field's edit that has not reached the draft is sent when the page goes away.
 * Field states change only through krm.field (krm-field.js).
 */
(() => {
    "use strict";

    const krm = window.krm;
    const {ATTR, EVENT, HEADER} = krm;

    const RESETS = new Set(["revert", "take_theirs", "remove_key"]);  // button edits that replace what is typed
    const RETRIED = new Set([502, 503, 504]);  // answers after which a field's edit is sent again
    const RESEND_DELAY = 1000;           // ms before an edit whose request got no answer is sent again

    const state = el => krm.field.state(el);
    const inFlight = new Set();          // requests of components, from leaving to finished
    const idleWaiters = [];              // {component, resume, except}: requests waiting for the fields' edits
    const queue = [];                    // queued fields, in the order of their latest edit
    let flushing = null;                 // {field, ctx}: the queued edit being sent now
    const answered = new WeakSet();      // requests that got a whole answer from the server
    let leaving = false;                 // the page is going away (pagehide)

    // -- the queue ----------------------------------------------------------------------------

    function enqueue(field, event = "queue", first = false) {
        if (!krm.field.fire(field, event)) return false;
        const at = queue.indexOf(field);
        if (at >= 0) queue.splice(at, 1);
        if (first) queue.unshift(field);
        else queue.push(field);
        return true;
    }

    // Sends the first queued edit; the next one goes when its request has finished.
    function flushQueue() {
        while (!flushing && krm.page.connection() === "live" && queue.length) {
            const field = queue.shift();
            if (!field.isConnected || state(field) !== "queued") continue;  // typed again: its own request follows
            flushing = {field, ctx: null};
            htmx.trigger(field, EVENT.flush);
            if (!flushing.ctx) flushing = null;  // htmx made no request for it (removed meanwhile)
        }
    }

    // A request that got no answer (the connection dropped): its edit goes back to the queue.
    function requeueLost(ctx) {
        const el = ctx.sourceElement;
        const lost = krm.isField(el) && !answered.has(ctx) && el.isConnected;
        if (flushing && flushing.ctx === ctx) {
            flushing = null;
            if (lost && enqueue(el, "lose", true)) {
                setTimeout(flushQueue, RESEND_DELAY);
                return;
            }
            setTimeout(flushQueue, 0);
        } else if (lost && enqueue(el, "lose")) {
            setTimeout(flushQueue, RESEND_DELAY);
        }
    }

    // -- Undo, Take theirs, Remove ------------------------------------------------------------

    // The path a control edits: segments are keys, positions or (list items) their merge keys.
    function pathOf(el) {
        try {
            const vals = krm.valsOf(el);
            const path = JSON.parse(vals.path || "[]");
            return vals.op === "rename_key" ? path.concat([vals.key]) : path;
        } catch (error) {
            return null;
        }
    }

    // Forgets the edits of the fields at or under a button's path: the render after it shows the draft there.
    function forgetEdits(component, button) {
        const where = pathOf(button);
        if (!where) return;
        for (const field of krm.field.inState(component, "typing", "queued", "sending", "refused", "settling")) {
            const path = pathOf(field);
            if (!path || path.length < where.length) continue;
            if (!where.every((segment, i) => JSON.stringify(segment) === JSON.stringify(path[i]))) continue;
            krm.field.fire(field, "forget");
            const at = queue.indexOf(field);
            if (at >= 0) queue.splice(at, 1);
        }
    }

    // -- a component's requests wait for its fields ---------------------------------------------

    function isIdle(component, except) {
        if (krm.field.inState(component, "typing", "queued").length) return false;
        for (const ctx of inFlight) {
            if (ctx.sourceElement !== except && component.contains(ctx.sourceElement)) return false;
        }
        return true;
    }

    function checkIdle() {
        for (let i = idleWaiters.length - 1; i >= 0; i--) {
            const waiter = idleWaiters[i];
            if (isIdle(waiter.component, waiter.except)) {
                idleWaiters.splice(i, 1);
                waiter.resume();
            }
        }
    }

    // -- the page goes away: send what has not reached the draft --------------------------------

    // htmx assembles the request (the field's value, hx-vals, hx-include, inherited headers, CSRF);
    // the send itself stays here: htmx admits a request through the field's hx-sync queue, where
    // it would wait behind a request still in flight and never leave the unloading page, and only
    // a keepalive fetch outlives the page.
    function sendOnLeave(ctx, el) {
        const body = new URLSearchParams(ctx.request.body);
        const from = krm.field.of(el).from;
        if (from !== null) body.set("from", from);
        try {
            fetch(ctx.request.action, {
                method: ctx.request.method, headers: ctx.request.headers, body,
                keepalive: true, credentials: "same-origin", mode: "same-origin"
            }).catch(() => {});
        } catch (error) {
            // keepalive bodies are capped (64 kB in all): a larger edit stays in the draft it reached.
        }
    }

    window.addEventListener("pagehide", () => {
        leaving = true;
        for (const el of new Set([...queue, ...document.querySelectorAll("[" + ATTR.state + "]")])) {
            if (krm.isField(el) && state(el) !== "clean") htmx.trigger(el, EVENT.flush);
        }
    });
    window.addEventListener("pageshow", () => { leaving = false; });  // back from the back-forward cache

    // -- requests --------------------------------------------------------------------------------

    function fieldRequest(event, ctx, el) {
        if (state(el) === "clean") {  // nothing to send: an Undo... replaced what was typed
            event.preventDefault();
            return;
        }
        if (leaving) {
            event.preventDefault();
            sendOnLeave(ctx, el);
            return;
        }
        if (flushing && flushing.field === el && !flushing.ctx) {
            flushing.ctx = ctx;
        } else if (krm.page.connection() !== "live" || queue.length || flushing) {
            event.preventDefault();
            enqueue(el);
            return;
        }
        krm.field.fire(el, "send");
    }

    document.addEventListener("htmx:config:request", event => {
        const ctx = event.detail.ctx;
        const el = ctx.sourceElement;
        if (krm.isField(el)) {
            fieldRequest(event, ctx, el);
            return;
        }
        const component = krm.componentOf(el);
        if (krm.isWrite(el)) {
            // The buttons are disabled while not live; this also covers a click before that ran.
            if (component.getAttribute(ATTR.connection) !== "live") {
                event.preventDefault();
                return;
            }
            if (RESETS.has(krm.valsOf(el).op)) forgetEdits(component, el);
        }
        if (!component || !el.matches(krm.sel.flush)) return;
        if (!isIdle(component, el)) {
            event.preventDefault();
            for (const field of krm.field.inState(component, "typing")) htmx.trigger(field, EVENT.flush);
            idleWaiters.push({component, resume: () => el.click(), except: el});
            setTimeout(checkIdle, 0);
            return;
        }
        const refused = krm.field.inState(component, "refused");
        if (refused.length) {
            event.preventDefault();
            krm.outcome.fixFirst(component, refused);
        }
    });

    document.addEventListener("htmx:before:request", event => {
        const {sourceElement: el, request} = event.detail.ctx;
        if (krm.componentOf(el)) inFlight.add(event.detail.ctx);
        // read when the request leaves (after the edits before it were answered), not when triggered
        const from = krm.isField(el) ? krm.field.of(el).from : null;
        if (from !== null && request.body && typeof request.body.set === "function") request.body.set("from", from);
    });

    function sentValue(el, body) {
        return body && typeof body.get === "function" ? krm.widget(el).sent(el, body) : undefined;
    }

    document.addEventListener("htmx:after:request", event => {
        const ctx = event.detail.ctx;
        const {sourceElement: el, request, response} = ctx;
        const isField = krm.isField(el);
        // a gateway's "try again later" counts as no answer: a field's edit is sent again
        if (!response || !RETRIED.has(response.status) || !isField) answered.add(ctx);
        const component = krm.componentOf(el);
        if (!component || !response) return;
        if (response.status >= 400) {
            if (isField && answered.has(ctx)) krm.field.fire(el, "refuse");
            krm.page.endsSession(ctx);
            krm.outcome.refusal(component, ctx, isField && !answered.has(ctx));
            return;
        }
        if (response.status >= 300) return;
        const edits = response.headers.get(HEADER.edits);
        if (edits !== null) krm.outcome.clear(component);  // the draft changed after the outcome shown
        if (!isField) return;
        const field = krm.field.of(el);
        const sent = sentValue(el, request.body);
        if (field.from !== null && typeof sent === "string") field.from = sent;  // the draft has it now
        if (sent !== krm.widget(el).value(el) || field.state === "typing") return;  // a newer edit follows
        krm.field.accepted(el, edits === null ? null : Number(edits));
    });

    document.addEventListener("htmx:error", event => {
        const ctx = event.detail.ctx;
        const el = ctx && ctx.sourceElement;
        if (!ctx || ctx.response || !(krm.isWrite(el) || (el instanceof Element && el.matches(krm.sel.flush)))) return;
        const component = krm.componentOf(el);
        if (component) krm.outcome.noAnswer(component);
    });

    document.addEventListener("htmx:finally:request", event => {
        requeueLost(event.detail.ctx);
        if (inFlight.delete(event.detail.ctx) && idleWaiters.length) setTimeout(checkIdle, 0);
    });

    krm.send = Object.freeze({
        flushQueue,
        /** Whether a request of this element is out (left, not finished). */
        inFlight: el => [...inFlight].some(ctx => ctx.sourceElement === el)
    });
})();
