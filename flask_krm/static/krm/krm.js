/* flask-krm page scripts: the shared namespace, names and texts.
 *
 * krm_script() loads the page scripts in this order, each after htmx and its SSE extension:
 *   krm.js          this file: window.krm, the attribute names, headers, events and texts every
 *                   module reads (no module spells a data-krm-* name of another one itself);
 *   krm-widgets.js  the widget table: how each kind of control gives, shows and takes a value;
 *   krm-field.js    one state object per field: its states and transitions, and the morph guard;
 *   krm-outcome.js  outcomes the page shows in a component's outcome region;
 *   krm-page.js     the page's connection state, its components' status and write buttons;
 *   krm-send.js     field requests: queued while not live, sent before Save, sent on leaving;
 *   krm-keys.js     keyboard habits (Ctrl+S, Enter in a map's add row);
 *   krm-yaml.js     editors' YAML tab;
 *   krm-filter.js   list filters that apply as you type.
 * Modules reach each other through window.krm at event time, never at load time, except for what an
 * earlier module in this order defined.
 */
(() => {
    "use strict";

    const krm = window.krm = {};

    /* Attribute names. A field's state is data-krm-state (absent while clean, see krm-field.js);
     * data-krm-unsent, -pending, -queued and -refused are written from it, for stylesheets. */
    krm.ATTR = Object.freeze({
        state: "data-krm-state",
        unsent: "data-krm-unsent",
        pending: "data-krm-pending",
        queued: "data-krm-queued",
        refused: "data-krm-refused",
        component: "data-krm-component",
        kind: "data-krm-kind",
        connection: "data-krm-connection",
        edits: "data-krm-edits",
        stream: "data-krm-stream",
        reason: "data-krm-reason",
        flush: "data-krm-flush",
        outcome: "data-krm-outcome",
        tab: "data-krm-tab",
        uid: "data-krm-uid",
        reviewKind: "data-krm-review-kind",
        pendingDelete: "data-krm-pending-delete",
        yamlLine: "data-krm-yaml-line",
        yamlFresh: "data-krm-yaml-fresh"
    });

    krm.HEADER = Object.freeze({
        edits: "X-KRM-Edits",                 // an accepted edit: the object's edit count after it
        sessionEnded: "X-KRM-Session-Ended"   // a refusal that ends the page's session: why
    });

    krm.EVENT = Object.freeze({
        flush: "krm-flush",    // makes a field's request now (its hx-trigger lists it)
        retry: "krm-retry",    // reconnects the channel after a failed first connect
        close: "krm-close",    // the server ends the channel for good
        drafts: "krm-drafts"   // the shared draft store is unavailable, or back
    });

    krm.TEXT = Object.freeze({
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
    });

    const attr = name => "[" + name + "]";
    krm.sel = Object.freeze({
        component: attr(krm.ATTR.component),
        editor: attr(krm.ATTR.component) + "[" + krm.ATTR.kind + "=editor]",
        list: attr(krm.ATTR.component) + "[" + krm.ATTR.kind + '="list"]',
        flush: attr(krm.ATTR.flush)
    });

    krm.componentOf = el => el instanceof Element ? el.closest(krm.sel.component) : null;
    /** A control whose edits a component sends: an input, text area or select with hx-post. */
    krm.isField = el => el instanceof Element && el.matches("input[hx-post], textarea[hx-post], select[hx-post]")
        && krm.componentOf(el) !== null;
    /** A button that writes (Save, Remove, Undo, Add, row actions). */
    krm.isWrite = el => el instanceof HTMLButtonElement && el.hasAttribute("hx-post") && krm.componentOf(el) !== null;
    krm.valsOf = el => {
        try {
            return JSON.parse(el.getAttribute("hx-vals") || "{}");
        } catch (error) {
            return {};
        }
    };
    /** The page's channel: the one SSE connection every live component is fed by. */
    krm.channel = () => document.getElementById("krm-channel");
    krm.onReady = run => {
        if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
        else run();
    };
})();
