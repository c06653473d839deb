function r(t,e){return{start:String(t),end:String(e)}}function o(t){return{sel:String(t)}}export{r as a,o as b};
