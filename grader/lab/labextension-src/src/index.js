// "Course grades" in JupyterLab: a Launcher card, a command-palette entry and a File-menu entry
// that open the grading page of grader.lab (<Lab URL>/grader/, a Jupyter Server extension in the
// same Python package) in a Lab tab. The page is the Lab server's own: same origin, behind the
// Lab's login; it never sees the grading service's token.
import { ILayoutRestorer } from '@jupyterlab/application';
import { ICommandPalette, IFrame, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { ILauncher } from '@jupyterlab/launcher';
import { IMainMenu } from '@jupyterlab/mainmenu';
import { LabIcon } from '@jupyterlab/ui-components';

const COMMAND = 'grader:course-grades';
const LABEL = 'Course grades';
const ID = 'grader-course-grades';

const gradesIcon = new LabIcon({
  name: 'grader:course-grades',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16">' +
    '<path class="jp-icon3" fill="#616161" d="M19 3H5a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h14a2 2 0 0 0 2-2V5a2 2 0 0 0-2-2zM9 17H7v-7h2v7zm4 0h-2V7h2v10zm4 0h-2v-4h2v4z"/>' +
    '</svg>'
});

// The page's scripts call its own handlers (same origin, with the Lab's _xsrf cookie): it needs
// scripts and same-origin, nothing else (no forms, popups or top navigation).
const SANDBOX = ['allow-scripts', 'allow-same-origin'];

class CourseGrades extends MainAreaWidget {
  constructor(url) {
    const content = new IFrame({ sandbox: SANDBOX, referrerPolicy: 'same-origin' });
    content.url = url;
    super({ content });
    this.id = ID;
    this.addClass('grader-CourseGrades');
    this.title.label = LABEL;
    this.title.icon = gradesIcon;
    this.title.closable = true;
  }

  // Shown again (its tab chosen after another one): the attempts may have changed meanwhile, e.g.
  // after a submission from nbgrader's Assignments panel, so the page reloads.
  onAfterShow(msg) {
    super.onAfterShow(msg);
    if (this.seen) {
      this.refresh();
    }
    this.seen = true;
  }

  refresh() {
    const frame = this.content.node.querySelector('iframe');
    if (frame && frame.contentWindow) {
      frame.contentWindow.location.reload();
    }
  }
}

const plugin = {
  id: 'grader-course-grades:plugin',
  description: 'Opens the grading page (<Lab URL>/grader/) in a Lab tab.',
  autoStart: true,
  optional: [ILauncher, ICommandPalette, IMainMenu, ILayoutRestorer],
  activate: (app, launcher, palette, mainMenu, restorer) => {
    const url = URLExt.join(PageConfig.getBaseUrl(), 'grader/');
    const tracker = new WidgetTracker({ namespace: ID });
    let widget = null;

    app.commands.addCommand(COMMAND, {
      label: LABEL,
      caption: 'Your assignments: submit, and every attempt\'s score, late penalty and test messages',
      icon: gradesIcon,
      execute: () => {
        if (widget && !widget.isDisposed) {
          if (widget.isVisible) {
            widget.refresh(); // already in view: reload it; otherwise showing it reloads it
          }
          app.shell.activateById(widget.id);
          return widget;
        }
        widget = new CourseGrades(url);
        widget.disposed.connect(() => {
          widget = null;
        });
        tracker.add(widget);
        app.shell.add(widget, 'main');
        app.shell.activateById(widget.id);
        return widget;
      }
    });

    if (launcher) {
      launcher.add({ command: COMMAND, category: 'Course', rank: 0 });
    }
    if (palette) {
      palette.addItem({ command: COMMAND, category: 'Course' });
    }
    if (mainMenu) {
      mainMenu.fileMenu.addGroup([{ command: COMMAND }], 1);
    }
    if (restorer) {
      restorer.restore(tracker, { command: COMMAND, name: () => ID });
    }
  }
};

export default plugin;
