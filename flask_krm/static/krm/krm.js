/* flask-krm page script: connection state, unsent-edit protection and write gating.
 *
 * Loaded after htmx and its SSE extension (krm_script() emits all three). It
 *  - makes every field show the draft after every render, except a field with an edit the draft
 *    does not show yet (typed, in flight, refused, or accepted but not yet in a render made after
 *    it: the X-KRM-Edits answer header against the render's data-krm-edits marker); those keep
 *    what was typed, caret and selection included (htmx extension "krm", or morphSkip without it);
 *  - shows the page's connection state in every live component and enables its write buttons (Save,
 *    row actions...) only while the page's stream and the component's own stream are both live;
 *  - keeps every field editable whatever the connection: an edit made while the page's stream is
 *    not live (or whose request was lost with the connection) is queued in the page and sent, one
 *    field at a time in the order of the edits, once the stream is live again;
 *  - sends a field's unsent edit with a keepalive request when the page goes away (reload...);
 *  - retries a failed first connect, and stops for good on the server's "krm-close" event;
 *  - says in every live component that drafts are unavailable while the server's shared draft
 *    store cannot be reached (the "krm-drafts" event), and clears it when the store is back;
 *  - sends pending field edits before a request from a [data-krm-flush] button (Save...), and
 *    refuses that request while a field holds a value the server refused, naming the field;
 *  - sends with every text edit the text the field showed when the person began typing ("from"),
 *    so the server applies the change the person made, not a whole value over newer content;
 *  - forgets the local edits of fields an Undo, Take theirs or Remove applies to;
 *  - shows every refused answer to a component's request in its outcome region, and a refusal
 *    that ends the page's session (X-KRM-Session-Ended) as the connection state;
 *  - clears the outcome region when an edit changed the draft after it;
 *  - announces the page's connection state once, in its one live region (#krm-page-status);
 *  - saves on Ctrl+S / Cmd+S, adds a key on Enter in a map's add row, and strikes through the
 *    rows of a list whose delete is pending in its review list.
 */
(() => {
    "use strict";

    const UNSENT = "data-krm-unsent";    // edited, and no successful request has carried this value yet
    const PENDING = "data-krm-pending";  // edited, and the debounced request has not been made yet
    const QUEUED = "data-krm-queued";    // edited, and waiting in the page for the connection to come back
    const FROM = "data-krm-from";        // the text the field showed before the edits not yet applied
    const SETTLE = "data-krm-settle";    // accepted: follows the draft again from a render with this edit count
    const REFUSED = "data-krm-refused";  // the server refused the field's last edit (its error slot says why)
    const EDITS_HEADER = "X-KRM-Edits";
    const SESSION_ENDED_HEADER = "X-KRM-Session-Ended";
    const RESETS = new Set(["revert", "take_theirs", "remove_key"]);  // button edits that replace what is typed
    const RETRIED = new Set([502, 503, 504]);  // answers after which a field's edit is sent again
    const RESEND_DELAY = 1000;           // ms before a queued edit lost while the stream stayed live is retried
    const TEXT = {
        connecting: "Connecting…",
        syncing: "Loading…",
        live: "Live",
        reconnecting: "Reconnecting. Your unsaved changes are still here.",
        closed: "Disconnected. Reload the page to continue.",
        noAnswer: "No answer from the server (the connection dropped). Your unsaved changes are still here; "
            + "try again when the page is live.",
        failed: status => "The server could not do this (HTTP " + status + "). Your unsaved changes are still here.",
        resending: status => "The server did not take this edit (HTTP " + status + "); it is sent again in a moment. "
            + "Your unsaved changes are still here.",
        fixFirst: "Nothing was saved: correct the marked field first. Your other changes are still here.",
        fixFirstMany: "Nothing was saved: correct the marked fields first. Your other changes are still here.",
        draftsUnavailable: "Drafts are unavailable right now: your changes are kept in this page and on the server, "
            + "and shared with your other tabs again as soon as the draft store is back."
    };

    let connection = "connecting";
    let closedReason = "";
    const inFlight = new Set();
    const idleWaiters = [];
    const queue = [];          // queued fields, in the order of their latest edit
    let flushing = null;       // {field, ctx}: the queued edit being sent now
    const answered = new WeakSet();  // requests that got a whole answer from the server

    const componentOf = el => el instanceof Element ? el.closest("[data-krm-component]") : null;
    const isField = el => el instanceof Element && el.matches("input[hx-post], textarea[hx-post], select[hx-post]")
        && componentOf(el) !== null;

    // -- a field shows the draft unless it holds an edit the draft does not show yet ------------

    const skipped = new WeakMap();  // field -> {edits, value, checked} of the newest render it skipped

    // The edit count a render was made with (0 when it carries none): the count on the root of
    // the block the node came in (a block sent alone), else the marker of the body it came in.
    function renderEdits(newNode) {
        let root = newNode;
        const stop = "[data-krm-edits], hx-partial, .krm-body";
        while (root.parentNode && !(root instanceof Element && root.matches(stop))) {
            root = root.parentNode;
        }
        const marker = root instanceof Element && root.hasAttribute("data-krm-edits") ? root
            : typeof root.querySelector === "function" ? root.querySelector("[data-krm-edits]") : null;
        return marker ? Number(marker.getAttribute("data-krm-edits")) || 0 : 0;
    }

    // Whether a render must leave the field as it is (its unsent edit is not in the render).
    function keepsTyped(field, newNode) {
        if (!field.hasAttribute(UNSENT)) return false;
        const edits = renderEdits(newNode);
        const settle = field.getAttribute(SETTLE);
        if (settle === null || edits < Number(settle)) {
            skipped.set(field, {edits, value: newNode.defaultValue, checked: newNode.defaultChecked});
            return true;
        }
        settled(field);
        return false;
    }

    function settled(field) {
        field.removeAttribute(UNSENT);
        field.removeAttribute(FROM);
        field.removeAttribute(SETTLE);
        skipped.delete(field);
    }

    // An accepted edit whose render already came (and was skipped, the answer not being there yet):
    // take what that render showed.
    function adoptSkipped(field, edits) {
        const render = skipped.get(field);
        if (!render || render.edits < edits) return false;
        if (field.type === "checkbox") field.defaultChecked = render.checked;
        else if (typeof render.value === "string") field.defaultValue = render.value;
        settled(field);
        followDraft(field);
        return true;
    }

    const registered = htmx.registerExtension("krm", {
        htmx_before_morph_node: (elt, detail) => !(isField(detail.oldNode) && keepsTyped(detail.oldNode, detail.newNode))
    });
    if (registered === false) {  // the host limits htmx.config.extensions: fields with an unsent edit skip morphs
        const skip = "[" + UNSENT + "]";
        const current = htmx.config.morphSkip;
        if (!current) htmx.config.morphSkip = skip;
        else if (!current.split(",").map(s => s.trim()).includes(skip)) htmx.config.morphSkip = current + "," + skip;
    }

    // A morph sets attributes (value, checked, a textarea's text), not what a typed-in or focused
    // field shows: make each field without an unsent edit show what the render says.
    function followDraft(field) {
        if (field.hasAttribute(UNSENT)) return;
        if (field.type === "checkbox") {
            if (field.checked !== field.defaultChecked) field.checked = field.defaultChecked;
            return;
        }
        if (field instanceof HTMLSelectElement) {
            for (const option of field.options) {
                if (option.selected !== option.defaultSelected) option.selected = option.defaultSelected;
            }
            return;
        }
        if (field.value === field.defaultValue) return;
        const focused = document.activeElement === field;
        field.value = field.defaultValue;
        if (focused) {
            try {
                field.setSelectionRange(field.value.length, field.value.length);
            } catch (error) {
                // number inputs have no selection
            }
        }
    }

    function followDrafts() {
        for (const field of document.querySelectorAll("[data-krm-component] [hx-post]")) {
            if (isField(field)) followDraft(field);
        }
    }

    // Forget the local edits of the fields at or under a button's path (Undo, Take theirs, Remove):
    // the render after it shows the draft there.
    function pathOf(el) {
        try {
            const vals = JSON.parse(el.getAttribute("hx-vals") || "{}");
            const path = JSON.parse(vals.path || "[]");
            return vals.op === "rename_key" ? path.concat([vals.key]) : path;
        } catch (error) {
            return null;
        }
    }

    function forgetEdits(component, button) {
        const where = pathOf(button);
        if (!where) return;
        for (const field of component.querySelectorAll("[" + UNSENT + "]")) {
            const path = pathOf(field);
            if (!isField(field) || !path || path.length < where.length) continue;
            // segments are keys, positions or (list items) their merge keys as objects
            if (!where.every((segment, i) => JSON.stringify(segment) === JSON.stringify(path[i]))) continue;
            for (const name of [PENDING, QUEUED, REFUSED]) field.removeAttribute(name);
            settled(field);
            const at = queue.indexOf(field);
            if (at >= 0) queue.splice(at, 1);
        }
    }
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
        // A change that came without a beforeinput (a script, autofill) started from what the last
        // render showed.
        if (el.type !== "checkbox" && typeof el.defaultValue === "string" && !el.hasAttribute(FROM)) {
            el.setAttribute(FROM, el.defaultValue);
        }
        el.setAttribute(UNSENT, "");
        el.setAttribute(PENDING, "");
        el.removeAttribute(SETTLE);
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
            if (!el.hasAttribute(UNSENT)) {  // nothing to send: an Undo... replaced what was typed
                event.preventDefault();
                return;
            }
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
        if (isWrite(el) && RESETS.has((JSON.parse(el.getAttribute("hx-vals") || "{}")).op)) {
            forgetEdits(componentOf(el), el);
        }
        if (!(el instanceof Element) || !el.matches("[data-krm-flush]")) return;
        const component = componentOf(el);
        if (component && !isIdle(component, el)) {
            event.preventDefault();
            for (const field of component.querySelectorAll("[" + PENDING + "]")) htmx.trigger(field, "krm-flush");
            idleWaiters.push({component, resume: () => el.click(), except: el});
            setTimeout(checkIdle, 0);
            return;
        }
        const refused = component ? refusedFields(component) : [];
        if (refused.length) {
            event.preventDefault();
            fixFirst(component, refused);
        }
    });

    // -- outcomes shown by the page ---------------------------------------------------------------

    function outcomeRegion(component) {
        return document.getElementById(component.id + "-outcome");
    }

    function clearOutcome(component) {
        const region = outcomeRegion(component);
        if (region) for (const shown of region.querySelectorAll(".krm-save-outcome")) shown.remove();
    }

    // Shows an outcome the server did not render; ``causes`` are [field, text] pairs linked to their fields.
    function showOutcome(component, kind, message, causes = []) {
        const region = outcomeRegion(component);
        if (!region) return;
        const box = document.createElement("div");
        box.className = "krm-save-outcome krm-outcome-" + kind;
        box.setAttribute("data-krm-outcome", kind);
        const text = document.createElement("p");
        text.className = "krm-outcome-message";
        text.textContent = message;
        box.append(text);
        if (causes.length) {
            const list = document.createElement("ul");
            list.className = "krm-outcome-causes";
            for (const [field, why] of causes) {
                const item = document.createElement("li");
                const link = document.createElement("a");
                link.href = "#" + field.id;
                link.textContent = labelOf(field);
                item.append(link, why ? ": " + why : "");
                list.append(item);
            }
            box.append(list);
        }
        region.replaceChildren(box);
    }

    function labelOf(field) {
        const label = field.id ? document.querySelector("label[for='" + CSS.escape(field.id) + "']") : null;
        return (label ? label.textContent : field.name || "field").trim();
    }

    function refusedFields(component) {
        return [...component.querySelectorAll("[" + REFUSED + "]")].filter(f => isField(f) && f.hasAttribute(UNSENT));
    }

    function fixFirst(component, fields) {
        const causes = fields.map(field => {
            const slot = document.getElementById(field.id + "-error");
            return [field, slot ? slot.textContent.trim() : ""];
        });
        showOutcome(component, "fix-fields", fields.length === 1 ? TEXT.fixFirst : TEXT.fixFirstMany, causes);
        fields[0].focus();
    }

    // A refused answer the server rendered nothing for (a proxy's error page, a host's error
    // handler...): say so at the component.
    function showRefusal(component, ctx) {
        const text = ctx.text || "";
        if (text.includes("<hx-partial")) return;
        const type = ctx.response.headers.get("Content-Type") || "";
        const plain = type.startsWith("text/plain") && text.trim() && text.length <= 500 ? text.trim() : "";
        const status = ctx.response.status;
        const resent = isField(ctx.sourceElement) && !answered.has(ctx);
        showOutcome(component, "failed", plain || (resent ? TEXT.resending(status) : TEXT.failed(status)));
    }

    function sessionEnded(ctx) {
        const reason = ctx.response.headers.get(SESSION_ENDED_HEADER);
        if (reason === null) return false;
        let text = TEXT.closed;
        try {
            text = decodeURIComponent(reason) || text;
        } catch (error) {
            // keep the general text
        }
        setConnection("closed", text);
        return true;
    }

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
        const include = field.getAttribute("hx-include");  // the YAML tab's starting text
        if (include) for (const node of document.querySelectorAll(include)) if (node.name) body.set(node.name, node.value);
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
        const ctx = event.detail.ctx;
        const {sourceElement: el, request, response} = ctx;
        // a gateway's "try again later" counts as no answer: a field's edit is sent again
        if (!response || !RETRIED.has(response.status) || !isField(el)) answered.add(ctx);
        const component = componentOf(el);
        if (!component || !response) return;
        if (response.status >= 400) {
            if (isField(el) && answered.has(ctx)) el.setAttribute(REFUSED, "");
            sessionEnded(ctx);
            showRefusal(component, ctx);
            return;
        }
        if (response.status >= 300) return;
        const edits = response.headers.get(EDITS_HEADER);
        if (edits !== null) clearOutcome(component);  // the draft changed after the outcome shown
        if (!isField(el)) return;
        el.removeAttribute(REFUSED);
        const sent = sentValue(el, request.body);
        if (el.hasAttribute(FROM) && typeof sent === "string") el.setAttribute(FROM, sent);  // the draft has it now
        if (sent !== currentValue(el) || el.hasAttribute(PENDING)) return;
        // without the extension no render settles it; the YAML text is settled by its answer (its fresh text)
        if (edits === null || registered === false || el.matches(".krm-yaml-text")) settled(el);
        else if (!adoptSkipped(el, Number(edits))) el.setAttribute(SETTLE, edits);
    });

    document.addEventListener("htmx:error", event => {
        const ctx = event.detail.ctx;
        const el = ctx && ctx.sourceElement;
        if (!ctx || ctx.response || !(isWrite(el) || (el instanceof Element && el.matches("[data-krm-flush]")))) return;
        const component = componentOf(el);
        if (component) showOutcome(component, "no-answer", TEXT.noAnswer);
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

    function announce() {
        const region = document.getElementById("krm-page-status");
        const text = connection === "closed" ? (closedReason || TEXT.closed) : TEXT[connection];
        // the first "Live" of a page is not news: only changes after it are announced
        if (!region || connection === "connecting" || (connection === "live" && !region.textContent)) return;
        if (region.textContent !== text) region.textContent = text;
    }

    // A list's rows are shared by every session: which of them this person is about to delete is
    // read from the list's review region (#<id>-review) and marked here, after every swap.
    function markPendingDeletes() {
        for (const list of document.querySelectorAll('[data-krm-component][data-krm-kind="list"]')) {
            const review = document.getElementById(list.id + "-review");
            const uids = new Set();
            if (review) {
                for (const item of review.querySelectorAll('[data-krm-review-kind="delete"][data-krm-uid]')) {
                    uids.add(item.getAttribute("data-krm-uid"));
                }
            }
            // with nothing pending (the usual case) only rows still marked are visited
            const rows = uids.size ? "tr[data-krm-uid]" : "tr[data-krm-pending-delete]";
            for (const row of list.querySelectorAll(rows)) {
                const pending = uids.has(row.getAttribute("data-krm-uid"));
                if (row.hasAttribute("data-krm-pending-delete") !== pending) {
                    row.toggleAttribute("data-krm-pending-delete", pending);
                }
            }
        }
    }

    function refresh() {
        announce();
        markPendingDeletes();
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
    onChannel("htmx:sse:after:message", () => {
        followDrafts();
        refresh();
    });
    document.addEventListener("htmx:after:swap", () => {
        followDrafts();
        refresh();  // a swapped-in button starts enabled
    });
    onChannel("krm-close", event => setConnection("closed", event.detail && event.detail.data));
    onChannel("krm-drafts", event => showDraftsNotice(Boolean(event.detail) && event.detail.data === "unavailable"));

    // The shared draft store cannot be reached: said once per live component, under its header.
    function showDraftsNotice(unavailable) {
        for (const component of document.querySelectorAll("[data-krm-component]")) {
            let notice = component.querySelector(":scope .krm-drafts-notice");
            if (!unavailable) {
                if (notice) notice.remove();
                continue;
            }
            const header = component.querySelector(".krm-header");
            if (notice || !header) continue;
            notice = document.createElement("p");
            notice.className = "krm-drafts-notice";
            notice.setAttribute("role", "status");
            notice.textContent = TEXT.draftsUnavailable;
            header.after(notice);
        }
    }
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

    // -- keyboard ------------------------------------------------------------------------------

    const enabled = button => button instanceof HTMLButtonElement && !button.disabled && button.offsetParent !== null;

    // Ctrl+S / Cmd+S: the Save of the component holding the focus, or the page's only Save.
    function saveButton() {
        const selector = ".krm-action-save, .krm-review-save";
        const around = componentOf(document.activeElement);
        const own = around ? [...around.querySelectorAll(selector)] : [];
        if (around && !own.length) {
            const review = document.getElementById(around.id + "-review");
            if (review) own.push(...review.querySelectorAll(selector));
        }
        const candidates = own.length ? own : [...document.querySelectorAll(selector)];
        const usable = candidates.filter(enabled);
        return usable.length === 1 ? usable[0] : null;
    }

    document.addEventListener("keydown", event => {
        if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && event.key.toLowerCase() === "s") {
            const button = saveButton();
            if (!button) return;
            event.preventDefault();
            button.click();
            return;
        }
        // Enter in a map's add row adds the key (the row is no form, so nothing else would).
        const el = event.target;
        if (event.key !== "Enter" || event.isComposing || !(el instanceof HTMLInputElement)) return;
        const row = el.closest(".krm-add");
        const add = row && row.querySelector(".krm-add-key");
        if (!add || !componentOf(row)) return;
        event.preventDefault();
        if (!enabled(add)) return;
        refocus = {button: add, rowId: row.id};
        add.click();
    });

    // After a key was added from the keyboard, the emptied add row's key input takes the focus,
    // unless the person has moved it out of the row meanwhile.
    let refocus = null;
    document.addEventListener("htmx:finally:request", event => {
        if (!refocus || event.detail.ctx.sourceElement !== refocus.button) return;
        const {rowId} = refocus;
        const added = event.detail.ctx.response && event.detail.ctx.response.status < 300;
        refocus = null;
        if (!added) return;
        setTimeout(() => {
            const row = document.getElementById(rowId);
            const active = document.activeElement;
            if (row && (!active || active === document.body || row.contains(active))) {
                row.querySelector("input.krm-key")?.focus();
            }
        }, 0);
    });

    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", refresh);
    else refresh();
})();
