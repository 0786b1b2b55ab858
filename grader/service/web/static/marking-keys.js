// The grading page (/admin/assignments/NAME/written/CELL): one key per rubric item, and keys to move on.
//
// Every action is also an ordinary control (checkboxes, links, a submit button), so the page works without
// this script and by Tab alone. With it, a key toggles the item that shows that key, c goes to the comment,
// s saves, n and p go to the next and previous group; typing in the comment or the adjustment is never
// taken for a key (Esc leaves the field). Each toggle is said in the page's status region (a polite live
// region), with the score it gives, so a screen reader user hears what changed.
"use strict";
(function () {
  const form = document.getElementById("marking");
  const status = document.getElementById("status");
  if (!form || !status) {
    return;
  }
  const boxes = Array.from(form.querySelectorAll("input[type=checkbox][data-key]"));

  function score() {
    let total = 0;
    for (const box of boxes) {
      if (box.checked) {
        total += Number(box.dataset.points);
      }
    }
    return total;
  }

  function say(text) {
    status.textContent = text;
  }

  for (const box of boxes) {
    box.addEventListener("change", function () {
      const label = box.closest("label").textContent.replace(/\s+/g, " ").trim();
      say((box.checked ? "Applied " : "Removed ") + label + ". Items add up to " + score() + " points.");
    });
  }

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    const typing = target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement ||
      (target instanceof HTMLInputElement && target.type !== "checkbox");
    if (typing) {
      if (event.key === "Escape") {
        target.blur();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    const box = boxes.find(function (b) { return b.dataset.key === event.key; });
    if (box) {
      box.checked = !box.checked;
      box.dispatchEvent(new Event("change"));
      event.preventDefault();
      return;
    }
    if (event.key === "c") {
      document.getElementById("comment").focus();
      event.preventDefault();
    } else if (event.key === "s") {
      say("Saving…");
      form.requestSubmit();
      event.preventDefault();
    } else if (event.key === "n" || event.key === "p") {
      const link = document.getElementById(event.key === "n" ? "next" : "previous");
      if (link) {
        link.click();
        event.preventDefault();
      }
    }
  });
})();
