"use strict";
// The section a search result or a related note pointed at: into view.
const target = document.querySelector("#note-body .target");
if (target) target.scrollIntoView({ block: "center" });
