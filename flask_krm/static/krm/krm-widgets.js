/* flask-krm widget table: how each kind of field control gives, shows and takes its value.
 *
 * Every difference between a checkbox, a select and a text control (an input or a text area) is a
 * row of WIDGETS; the other modules call krm.widget(el) and never ask which kind it is.
 *
 *   kind      value (what it holds)  text (edits carry "from")  rendered (a render's value)
 *   text      .value                 yes                        defaultValue
 *   select    .value                 no                         (its options' defaultSelected)
 *   checkbox  "true" / "false"       no                         defaultChecked
 */
(() => {
    "use strict";

    // A field shows what the render says; a focused text keeps its caret at the end.
    function showText(el) {
        if (el.value === el.defaultValue) return;
        const focused = document.activeElement === el;
        el.value = el.defaultValue;
        if (!focused) return;
        try {
            el.setSelectionRange(el.value.length, el.value.length);
        } catch (error) {
            // number inputs have no selection
        }
    }

    const WIDGETS = Object.freeze({
        text: {
            text: true,
            value: el => el.value,
            sent: (el, body) => body.get(el.name),
            rendered: node => node.defaultValue,
            adopt: (el, rendered) => {
                if (typeof rendered === "string") el.defaultValue = rendered;
            },
            show: showText
        },
        select: {
            text: false,
            value: el => el.value,
            sent: (el, body) => body.get(el.name),
            rendered: () => undefined,  // a morph already moved its options' defaultSelected
            adopt: () => {},
            show: el => {
                for (const option of el.options) {
                    if (option.selected !== option.defaultSelected) option.selected = option.defaultSelected;
                }
            }
        },
        checkbox: {
            text: false,
            value: el => el.checked ? "true" : "false",
            sent: (el, body) => body.has(el.name) ? "true" : "false",  // a form sends only a checked box
            rendered: node => node.defaultChecked,
            adopt: (el, rendered) => {
                el.defaultChecked = Boolean(rendered);
            },
            show: el => {
                if (el.checked !== el.defaultChecked) el.checked = el.defaultChecked;
            }
        }
    });

    const kindOf = el => el.type === "checkbox" ? "checkbox" : el instanceof HTMLSelectElement ? "select" : "text";

    /** The widget row of a field control. */
    window.krm.widget = el => WIDGETS[kindOf(el)];
})();
