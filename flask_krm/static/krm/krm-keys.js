/* flask-krm keyboard habits: Ctrl+S / Cmd+S saves, Enter in a map's add row adds the key. */
(() => {
    "use strict";

    const krm = window.krm;

    const enabled = button => button instanceof HTMLButtonElement && !button.disabled && button.offsetParent !== null;

    // Ctrl+S / Cmd+S: the Save of the component holding the focus, or the page's only Save.
    function saveButton() {
        const selector = ".krm-action-save, .krm-review-save";
        const around = krm.componentOf(document.activeElement);
        const own = around ? [...around.querySelectorAll(selector)] : [];
        if (around && !own.length) {
            const review = document.getElementById(around.id + "-review");
            if (review) own.push(...review.querySelectorAll(selector));
        }
        const candidates = own.length ? own : [...document.querySelectorAll(selector)];
        const usable = candidates.filter(enabled);
        return usable.length === 1 ? usable[0] : null;
    }

    // After a key was added from the keyboard, the emptied add row's key input takes the focus,
    // unless the person has moved it out of the row meanwhile.
    let refocus = null;

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
        if (!add || !krm.componentOf(row)) return;
        event.preventDefault();
        if (!enabled(add)) return;
        refocus = {button: add, rowId: row.id};
        add.click();
    });

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
})();
