/* The example's one script: a create form sends the object it describes as the JSON `body`
 * flask-krm's review endpoint expects ({"metadata": {"name"}, "data": {key: value}}). */
document.addEventListener("htmx:config:request", event => {
    const form = event.detail.ctx.sourceElement;
    if (!(form instanceof HTMLFormElement) || !form.matches("[data-example-create]")) return;
    const body = event.detail.ctx.request.body;
    const object = {metadata: {name: body.get("name") || ""}};
    if (body.get("key")) object.data = {[body.get("key")]: body.get("value") || ""};
    for (const name of ["name", "key", "value"]) body.delete(name);
    body.set("body", JSON.stringify(object));
});
document.addEventListener("htmx:after:request", event => {
    const {sourceElement: form, response} = event.detail.ctx;
    if (form instanceof HTMLFormElement && form.matches("[data-example-create]") && response && response.status < 300) form.reset();
});
