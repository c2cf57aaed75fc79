/* flask-krm: the `krmLines` swap style, which applies a line diff to an element's text.
 *
 * A live editor's update sends the YAML tab's text (#<id>-yaml-source) as the lines that changed:
 *   <hx-partial hx-target="#<id>-yaml-source" hx-swap="krmLines">{"from": N, "changes": [[start, end, [lines]], ...]}</hx-partial>
 * Each change replaces lines start..end (0-based, end excluded) of the text, which had N lines.
 * A text of another length is left alone (the next whole body brings it back). krm-yaml.js then
 * follows the text as it follows any update (htmx:sse:after:message).
 */
(() => {
    "use strict";

    function applyLines(target, payload) {
        const diff = JSON.parse(payload);
        const lines = target.textContent.split("\n");
        if (lines.length !== diff.from) return false;
        for (let at = diff.changes.length - 1; at >= 0; at--) {
            const [start, end, replacement] = diff.changes[at];
            lines.splice(start, end - start, ...replacement);
        }
        target.textContent = lines.join("\n");
        return true;
    }

    htmx.registerExtension("krm-lines", {
        handle_swap(style, target, fragment) {
            if (style !== "krmLines") return false;
            applyLines(target, fragment.textContent);
            return [target];
        },
    });
})();
