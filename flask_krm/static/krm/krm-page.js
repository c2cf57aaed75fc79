/* flask-krm page state: the connection of the page's channel, and what every render refreshes.
 *
 *   connection    means                                     from
 *   connecting    the first connect has not answered yet    (the page loaded)
 *   live          the channel streams                       htmx:sse:after:connection
 *   reconnecting  the channel is down and retried           a reconnect attempt, an error, a failed first connect
 *   closed        for good (the page must be reloaded)      krm-close, the stream ended, a session-ending refusal
 * Closed is final. A component's own state (data-krm-connection, its .krm-connection text) is the
 * page's, else its stream's (the body's .krm-stream marker: live, retrying, terminal or syncing);
 * its write buttons are enabled only while it is live. The page's connection is announced once,
 * in #krm-page-status. It also says when the shared draft store is unavailable (krm-drafts), and
 * strikes through the list rows whose delete is pending in the list's review (#<id>-review).
 */
(() => {
    "use strict";

    const krm = window.krm;
    const {ATTR, TEXT, EVENT} = krm;

    let connection = "connecting";
    let closedReason = "";

    function setConnection(state, reason) {
        if (connection === "closed") return;
        connection = state;
        if (state === "closed") closedReason = reason || "";
        refresh();
        krm.send.flushQueue();
    }

    function componentState(component) {
        const marker = component.querySelector(".krm-body > .krm-stream");
        const stream = marker ? marker.getAttribute(ATTR.stream) : "connecting";
        const reason = marker ? marker.getAttribute(ATTR.reason) || "" : "";
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
        for (const list of document.querySelectorAll(krm.sel.list)) {
            const review = document.getElementById(list.id + "-review");
            const uids = new Set();
            if (review) {
                const selector = "[" + ATTR.reviewKind + '="delete"][' + ATTR.uid + "]";
                for (const item of review.querySelectorAll(selector)) uids.add(item.getAttribute(ATTR.uid));
            }
            // with nothing pending (the usual case) only rows still marked are visited
            const rows = uids.size ? "tr[" + ATTR.uid + "]" : "tr[" + ATTR.pendingDelete + "]";
            for (const row of list.querySelectorAll(rows)) {
                const pending = uids.has(row.getAttribute(ATTR.uid));
                if (row.hasAttribute(ATTR.pendingDelete) !== pending) row.toggleAttribute(ATTR.pendingDelete, pending);
            }
        }
    }

    function refresh() {
        announce();
        markPendingDeletes();
        for (const component of document.querySelectorAll(krm.sel.component)) {
            const [state, text] = componentState(component);
            if (component.getAttribute(ATTR.connection) !== state) component.setAttribute(ATTR.connection, state);
            const status = component.querySelector(".krm-connection");
            if (status && status.textContent !== text) status.textContent = text;
            const writes = component.querySelector(".krm-writes");
            if (writes && writes.disabled) writes.disabled = false;  // rendered disabled until this script runs
            for (const button of component.querySelectorAll("button[hx-post]")) {
                if (button.disabled !== (state !== "live")) button.disabled = state !== "live";
            }
        }
    }

    // The shared draft store cannot be reached: said once per live component, under its header.
    function showDraftsNotice(unavailable) {
        for (const component of document.querySelectorAll(krm.sel.component)) {
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

    /** A refusal that ends the page's session (X-KRM-Session-Ended) closes the page's connection. */
    function endsSession(ctx) {
        const reason = ctx.response.headers.get(krm.HEADER.sessionEnded);
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

    function onChannel(name, handler) {
        document.addEventListener(name, event => {
            if (event.target === krm.channel()) handler(event);
        });
    }

    onChannel("htmx:sse:after:connection", () => setConnection("live"));
    onChannel("htmx:sse:before:connection", event => {
        if (event.detail.connection && event.detail.connection.attempt > 0) setConnection("reconnecting");
    });
    onChannel("htmx:sse:error", () => setConnection("reconnecting"));
    onChannel("htmx:sse:close", event => {
        if (event.detail && event.detail.reason !== "message") setConnection("closed");
    });
    onChannel(EVENT.close, event => setConnection("closed", event.detail && event.detail.data));
    onChannel(EVENT.drafts, event => showDraftsNotice(Boolean(event.detail) && event.detail.data === "unavailable"));
    // The first connect is an ordinary request: when it fails, nothing retries it but us.
    const retryFirstConnect = () => {
        setConnection("reconnecting");
        htmx.trigger(krm.channel(), EVENT.retry);
    };
    onChannel("htmx:response:error", retryFirstConnect);
    onChannel("htmx:error", retryFirstConnect);

    const rendered = () => {
        krm.field.followAll();
        refresh();  // a swapped-in button starts enabled
    };
    onChannel("htmx:sse:after:message", rendered);
    document.addEventListener("htmx:after:swap", rendered);

    krm.page = Object.freeze({
        /** The page's connection: connecting, live, reconnecting or closed. */
        connection: () => connection,
        endsSession
    });
    krm.onReady(refresh);
})();
