// The student's page (/me) after an upload: keeps the submission's status up to date without a reload.
//
// The status paragraph (#progress, a polite live region: screen readers announce each change) names the
// status request in data-status-url. Each request waits until the submission is graded or failed, or for
// WAIT_S, and answers with the sentence to show; once it is final the list of attempts is fetched again
// and swapped in. Without this script (or when the requests keep failing) the page says to reload it.
"use strict";
(function () {
  const WAIT_S = 25;
  const GIVE_UP_AFTER = 5; // failed requests in a row
  const region = document.getElementById("progress");
  if (!region || !region.dataset.statusUrl || !window.fetch) {
    return;
  }
  const message = region.querySelector("[data-message]");
  const hint = region.querySelector("[data-reload-hint]");
  const url = region.dataset.statusUrl + "?wait=" + WAIT_S;
  let failures = 0;
  if (hint) {
    hint.hidden = true; // this script shows the result when it comes
  }

  function say(text) {
    if (message && message.textContent !== text) {
      message.textContent = text;
    }
  }

  async function showAttempts() {
    const current = document.getElementById("attempts");
    if (!current || current.contains(document.activeElement)) {
      return; // never pull the page out from under the keyboard focus
    }
    const response = await fetch(window.location.pathname, { credentials: "same-origin", redirect: "error" });
    if (!response.ok) {
      return;
    }
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = page.getElementById("attempts");
    if (fresh && !current.contains(document.activeElement)) {
      current.replaceWith(document.importNode(fresh, true));
    }
  }

  async function ask() {
    let body;
    try {
      const response = await fetch(url, {
        credentials: "same-origin",
        cache: "no-store",
        redirect: "error", // signed out: a redirect to the sign-in page is not an answer
        headers: { Accept: "application/json" },
      });
      if (!response.ok) {
        throw new Error("status " + response.status);
      }
      body = await response.json();
    } catch (error) {
      failures += 1;
      if (failures >= GIVE_UP_AFTER) {
        if (hint) {
          hint.hidden = false;
        }
        return;
      }
      window.setTimeout(ask, 2000 * failures);
      return;
    }
    failures = 0;
    say(body.message);
    if (body.finished) {
      if (hint) {
        hint.remove(); // final: nothing to reload for
      }
      showAttempts().catch(function () {});
      return;
    }
    window.setTimeout(ask, 250);
  }

  ask();
})();
