/* flask-krm page script: connection state, unsent-edit protection and write gating.
 *
 * Loaded after htmx and its SSE extension (krm_script() emits all three). It
 *  - keeps fields with an unsent edit out of live morphs (data-krm-unsent joins htmx.config.morphSkip);
 *    core htmx already keeps the focused field's value, caret and selection;
 *  - shows the page's connection state in every live component and enables its write buttons (Save,
 *    row actions...) only while the page's stream and the component's own stream are both live;
 *  - keeps every field editable whatever the connection: an edit made while the page's stream is
 *    not live (or whose request was lost with the connection) is queued in the page and sent, one
 *    field at a time in the order of the edits, once the stream is live again;
 *  - sends a field's unsent edit with a keepalive request when the page goes away (reload...);
 *  - retries a failed first connect, and stops for good on the server's "krm-close" event;
 *  - sends pending field edits before a request from a [data-krm-flush] button (Save...);
 *  - sends with every text edit the text the field showed when the person began typing ("from"),
 *    so the server applies the change the person made, not a whole value over newer content.
 */
(() => {
    "use strict";

    const UNSENT = "data-krm-unsent";    // edited, and no successful request has carried this value yet
    const PENDING = "data-krm-pending";  // edited, and the debounced request has not been made yet
    const QUEUED = "data-krm-queued";    // edited, and waiting in the page for the connection to come back
    const FROM = "data-krm-from";        // the text the field showed before the edits not yet applied
    const RESEND_DELAY = 1000;           // ms before a queued edit lost while the stream stayed live is retried
    const TEXT = {
        connecting: "Connecting…",
        syncing: "Loading…",
        live: "Live",
        reconnecting: "Reconnecting. Your unsaved changes are still here.",
        closed: "Disconnected. Reload the page to continue."
    };

    let connection = "connecting";
    let closedReason = "";
    const inFlight = new Set();
    const idleWaiters = [];
    const queue = [];          // queued fields, in the order of their latest edit
    let flushing = null;       // {field, ctx}: the queued edit being sent now
    const answered = new WeakSet();  // requests that got a whole answer from the server

    const skip = "[" + UNSENT + "]";
    const current = htmx.config.morphSkip;
    if (!current) htmx.config.morphSkip = skip;
    else if (!current.split(",").map(s => s.trim()).includes(skip)) htmx.config.morphSkip = current + "," + skip;

    const componentOf = el => el instanceof Element ? el.closest("[data-krm-component]") : null;
    const isField = el => el instanceof Element && el.matches("input[hx-post], textarea[hx-post], select[hx-post]")
        && componentOf(el) !== null;
    const isWrite = el => el instanceof HTMLButtonElement && el.hasAttribute("hx-post") && componentOf(el) !== null;
    const channel = () => document.getElementById("krm-channel");

    function sentValue(el, body) {
        if (!body || typeof body.get !== "function") return undefined;
        if (el.type === "checkbox") return body.has(el.name) ? "true" : "false";
        return body.get(el.name);
    }

    function currentValue(el) {
        return el.type === "checkbox" ? (el.checked ? "true" : "false") : el.value;
    }

    const triggeredBy = (el, name) => (el.getAttribute("hx-trigger") || "").split(/[\s,]+/).includes(name);

    // Typing marks a field at once (a key being renamed is protected before its change event);
    // a change event marks only the fields it triggers (checkboxes, keys), not a text field's blur.
    function edited(event) {
        const el = event.target;
        if (!isField(el)) return;
        if (event.type === "change" && !triggeredBy(el, "change")) return;
        el.setAttribute(UNSENT, "");
        el.setAttribute(PENDING, "");
    }

    // The text a typing session starts from: what the field showed before its first change.
    document.addEventListener("beforeinput", event => {
        const el = event.target;
        if (isField(el) && el.type !== "checkbox" && !el.hasAttribute(FROM)) el.setAttribute(FROM, el.value);
    }, true);

    document.addEventListener("input", edited, true);
    document.addEventListener("change", edited, true);

    document.addEventListener("htmx:config:request", event => {
        const ctx = event.detail.ctx;
        const el = ctx.sourceElement;
        if (isField(el)) {
            el.removeAttribute(PENDING);
            if (flushing && flushing.field === el && !flushing.ctx) flushing.ctx = ctx;
            else if (connection !== "live" || queue.length || flushing) {
                event.preventDefault();
                enqueue(el);
            }
            return;
        }
        // The buttons are disabled while not live; this also covers a click before that ran.
        if (isWrite(el) && componentOf(el).getAttribute("data-krm-connection") !== "live") {
            event.preventDefault();
            return;
        }
        if (!(el instanceof Element) || !el.matches("[data-krm-flush]")) return;
        const component = componentOf(el);
        if (component && !isIdle(component, el)) {
            event.preventDefault();
            for (const field of component.querySelectorAll("[" + PENDING + "]")) htmx.trigger(field, "krm-flush");
            idleWaiters.push({component, resume: () => el.click(), except: el});
            setTimeout(checkIdle, 0);
        }
    });

    // -- edits queued while the connection is down ----------------------------------------------

    function enqueue(field) {
        const at = queue.indexOf(field);
        if (at >= 0) queue.splice(at, 1);
        queue.push(field);
        field.setAttribute(QUEUED, "");
    }

    // Sends the first queued edit; the next one goes when its request has finished.
    function flushQueue() {
        while (!flushing && connection === "live" && queue.length) {
            const field = queue.shift();
            field.removeAttribute(QUEUED);
            if (!field.isConnected || !field.hasAttribute(UNSENT)) continue;
            flushing = {field, ctx: null};
            htmx.trigger(field, "krm-flush");
            if (!flushing.ctx) flushing = null;  // htmx made no request for it (removed meanwhile)
        }
    }

    // A request that got no answer (the connection dropped): its edit goes back to the queue.
    function requeueLost(ctx) {
        const el = ctx.sourceElement;
        const lost = isField(el) && !answered.has(ctx) && el.isConnected && el.hasAttribute(UNSENT);
        if (flushing && flushing.ctx === ctx) {
            flushing = null;
            if (lost) {
                queue.unshift(el);
                el.setAttribute(QUEUED, "");
                setTimeout(flushQueue, RESEND_DELAY);
                return;
            }
            setTimeout(flushQueue, 0);
        } else if (lost && !el.hasAttribute(PENDING)) {
            enqueue(el);
            setTimeout(flushQueue, RESEND_DELAY);
        }
    }

    // -- the page goes away: send what has not been sent -----------------------------------------

    function headersOf(el) {
        const headers = {"HX-Request": "true"};
        const chain = [];
        for (let node = el; node instanceof Element; node = node.parentElement) chain.unshift(node);
        for (const node of chain) {
            for (const name of ["hx-headers:inherited", node === el ? "hx-headers" : null]) {
                const raw = name && node.getAttribute(name);
                if (raw) Object.assign(headers, JSON.parse(raw));
            }
        }
        return headers;
    }

    function editBody(field) {
        const body = new URLSearchParams();
        if (field.name && (field.type !== "checkbox" || field.checked)) body.set(field.name, field.value);
        const vals = JSON.parse(field.getAttribute("hx-vals") || "{}");
        for (const key of Object.keys(vals)) body.set(key, vals[key]);
        if (field.hasAttribute(FROM)) body.set("from", field.getAttribute(FROM));
        return body;
    }

    function sendOnLeave(field) {
        try {
            fetch(field.getAttribute("hx-post"), {
                method: "POST", keepalive: true, credentials: "same-origin", mode: "same-origin",
                headers: headersOf(field), body: editBody(field)
            }).catch(() => {});
        } catch (error) {
            // keepalive bodies are capped (64 kB in all): a larger edit stays in the draft it reached.
        }
    }

    window.addEventListener("pagehide", () => {
        const waiting = [...queue, ...document.querySelectorAll("[" + UNSENT + "]")];
        for (const field of new Set(waiting)) {
            if (isField(field) && field.hasAttribute(UNSENT)) sendOnLeave(field);
        }
    });

    function isIdle(component, except) {
        if (component.querySelector("[" + PENDING + "],[" + QUEUED + "]")) return false;
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

    document.addEventListener("htmx:before:request", event => {
        const {sourceElement: el, request} = event.detail.ctx;
        if (componentOf(el)) inFlight.add(event.detail.ctx);
        // read when the request leaves (after the edits before it were answered), not when triggered
        if (isField(el) && el.hasAttribute(FROM) && request.body && typeof request.body.set === "function") {
            request.body.set("from", el.getAttribute(FROM));
        }
    });

    document.addEventListener("htmx:after:request", event => {
        answered.add(event.detail.ctx);
        const {sourceElement: el, request, response} = event.detail.ctx;
        if (!isField(el) || !response || response.status >= 300) return;
        const sent = sentValue(el, request.body);
        if (el.hasAttribute(FROM) && typeof sent === "string") el.setAttribute(FROM, sent);  // the draft has it now
        if (sent === currentValue(el)) {
            el.removeAttribute(UNSENT);
            el.removeAttribute(FROM);
        }
    });

    document.addEventListener("htmx:finally:request", event => {
        requeueLost(event.detail.ctx);
        if (inFlight.delete(event.detail.ctx) && idleWaiters.length) setTimeout(checkIdle, 0);
    });

    // -- connection state -------------------------------------------------------------------

    function setConnection(state, reason) {
        if (connection === "closed") return;
        connection = state;
        if (state === "closed") closedReason = reason || "";
        refresh();
        flushQueue();
    }

    function componentState(component) {
        const marker = component.querySelector(".krm-body > .krm-stream");
        const stream = marker ? marker.getAttribute("data-krm-stream") : "connecting";
        const reason = marker ? marker.getAttribute("data-krm-reason") || "" : "";
        if (connection === "closed") return ["terminal", closedReason || TEXT.closed];
        if (connection !== "live") return [connection, TEXT[connection]];
        if (stream === "terminal") return ["terminal", reason];
        if (stream === "live") return ["live", TEXT.live];
        if (stream === "retrying") return ["reconnecting", TEXT.reconnecting];
        return ["syncing", TEXT.syncing];
    }

    function refresh() {
        for (const component of document.querySelectorAll("[data-krm-component]")) {
            const [state, text] = componentState(component);
            if (component.getAttribute("data-krm-connection") !== state) {
                component.setAttribute("data-krm-connection", state);
            }
            const status = component.querySelector(".krm-connection");
            if (status && status.textContent !== text) status.textContent = text;
            const writes = component.querySelector(".krm-writes");
            if (writes && writes.disabled) writes.disabled = false;  // rendered disabled until this script runs
            for (const button of component.querySelectorAll("button[hx-post]")) {
                if (button.disabled !== (state !== "live")) button.disabled = state !== "live";
            }
        }
    }

    function onChannel(name, handler) {
        document.addEventListener(name, event => {
            if (event.target === channel()) handler(event);
        });
    }

    onChannel("htmx:sse:after:connection", () => setConnection("live"));
    onChannel("htmx:sse:before:connection", event => {
        if (event.detail.connection && event.detail.connection.attempt > 0) setConnection("reconnecting");
    });
    onChannel("htmx:sse:error", () => setConnection("reconnecting"));
    onChannel("htmx:sse:after:message", refresh);
    document.addEventListener("htmx:after:swap", refresh);  // a swapped-in button starts enabled
    onChannel("krm-close", event => setConnection("closed", event.detail && event.detail.data));
    onChannel("htmx:sse:close", event => {
        if (event.detail && event.detail.reason !== "message") setConnection("closed");
    });
    // The first connect is an ordinary request: when it fails, nothing retries it but us.
    const retryFirstConnect = () => {
        setConnection("reconnecting");
        htmx.trigger(channel(), "krm-retry");
    };
    onChannel("htmx:response:error", retryFirstConnect);
    onChannel("htmx:error", retryFirstConnect);

    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", refresh);
    else refresh();
})();
