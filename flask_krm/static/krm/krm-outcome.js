/* flask-krm outcomes the page shows itself, in a component's outcome region (#<id>-outcome):
 * a refused answer the server rendered nothing for, a request that got no answer, the fields to
 * correct before Save. Outcomes the server renders come as <hx-partial>s into the same region.
 */
(() => {
    "use strict";

    const krm = window.krm;
    const {ATTR, TEXT} = krm;

    const regionOf = component => document.getElementById(component.id + "-outcome");

    function clear(component) {
        const region = regionOf(component);
        if (region) for (const shown of region.querySelectorAll(".krm-save-outcome")) shown.remove();
    }

    function labelOf(field) {
        const label = field.id ? document.querySelector("label[for='" + CSS.escape(field.id) + "']") : null;
        return (label ? label.textContent : field.name || "field").trim();
    }

    // Shows an outcome the server did not render; ``causes`` are [field, text] pairs linked to their fields.
    function show(component, kind, message, causes = []) {
        const region = regionOf(component);
        if (!region) return;
        const box = document.createElement("div");
        box.className = "krm-save-outcome krm-outcome-" + kind;
        box.setAttribute(ATTR.outcome, kind);
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

    /** Nothing is saved while fields hold refused values: names them, and focuses the first. */
    function fixFirst(component, fields) {
        const causes = fields.map(field => {
            const slot = document.getElementById(field.id + "-error");
            return [field, slot ? slot.textContent.trim() : ""];
        });
        show(component, "fix-fields", fields.length === 1 ? TEXT.fixFirst : TEXT.fixFirstMany, causes);
        fields[0].focus();
    }

    /** A refused answer the server rendered nothing for (a proxy's error page, a host's error
     * handler...): said at the component; ``resent`` when the field's edit is sent again. */
    function refusal(component, ctx, resent) {
        const text = ctx.text || "";
        if (text.includes("<hx-partial")) return;
        const type = ctx.response.headers.get("Content-Type") || "";
        const plain = type.startsWith("text/plain") && text.trim() && text.length <= 500 ? text.trim() : "";
        const status = ctx.response.status;
        show(component, "failed", plain || (resent ? TEXT.resending(status) : TEXT.failed(status)));
    }

    krm.outcome = Object.freeze({clear, show, fixFirst, refusal, noAnswer: component => show(component, "no-answer", TEXT.noAnswer)});
})();
